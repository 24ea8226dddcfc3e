"""Accuracy of a model on labelled images, each process counting its share."""

from collections.abc import Callable

import torch
from torch import Tensor, nn

from parabench.engine.distributed import sum_across
from parabench.workloads import LabelledImages


@torch.no_grad()
def accuracy(
    model: nn.Module,
    data: LabelledImages,
    to_inputs: Callable[[Tensor], Tensor],
    batch_size: int,
    device: torch.device,
    shard_index: int = 0,
    shard_count: int = 1,
) -> float:
    """Fraction of samples classified correctly; samples shard_index::shard_count are counted here."""
    was_training = model.training
    model.eval()
    mine = torch.arange(shard_index, len(data), shard_count)
    correct = 0.0
    for batch in mine.split(batch_size):
        inputs = to_inputs(data.images[batch].to(device, non_blocking=True))
        predictions = model(inputs).argmax(dim=1)
        correct += (predictions == data.labels[batch].to(device)).sum().item()
    model.train(was_training)
    total_correct, total = sum_across([correct, float(len(mine))], device)
    return total_correct / total
