"""Accuracy of a model on labelled images."""

from collections.abc import Callable

import torch
from torch import Tensor, nn

from parabench.workloads import LabelledImages


@torch.no_grad()
def accuracy(
    model: nn.Module,
    data: LabelledImages,
    to_inputs: Callable[[Tensor], Tensor],
    batch_size: int,
    device: torch.device,
) -> float:
    """Fraction of samples classified correctly, with the model in evaluation mode."""
    was_training = model.training
    model.eval()
    correct = 0
    for start in range(0, len(data), batch_size):
        inputs = to_inputs(data.images[start : start + batch_size].to(device, non_blocking=True))
        predictions = model(inputs).argmax(dim=1).cpu()
        correct += int((predictions == data.labels[start : start + batch_size]).sum())
    model.train(was_training)
    return correct / len(data)
