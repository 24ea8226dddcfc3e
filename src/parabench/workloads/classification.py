"""What classifier workloads share: counting correct argmax predictions, and accuracy over a labelled set."""

from collections.abc import Callable

import torch
from torch import Tensor, nn


def correct(outputs: Tensor, targets: Tensor) -> Tensor:
    """How many rows of class scores pick their target class (a device-side count)."""
    return (outputs.argmax(dim=1) == targets).sum()


@torch.no_grad()
def accuracy(model: nn.Module, images: Tensor, labels: Tensor, to_inputs: Callable[[Tensor], Tensor],
             batch_size: int, device: torch.device) -> float:
    """Fraction of images classified correctly, with the model in evaluation mode."""
    was_training = model.training
    model.eval()
    hits = 0
    for start in range(0, len(labels), batch_size):
        inputs = to_inputs(images[start : start + batch_size].to(device, non_blocking=True))
        predictions = model(inputs).argmax(dim=1).cpu()
        hits += int((predictions == labels[start : start + batch_size]).sum())
    model.train(was_training)
    return hits / len(labels)
