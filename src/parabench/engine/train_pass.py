"""The training loop's inner pass: one timed optimiser step per batch, with loss and accuracy totals."""

from collections.abc import Sequence

import torch
from torch import Tensor
from tqdm import tqdm

from parabench.engine.plan import RunPlan
from parabench.engine.step import optimizer_step
from parabench.engine.timing import StepClock
from parabench.strategies.base import Parallelized
from parabench.workloads import LabelledImages


def train_pass(plan: RunPlan, parallel: Parallelized, optimizer: torch.optim.Optimizer, data: LabelledImages,
               batches: Sequence[Tensor], clock: StepClock, progress: str | None = None) -> list[float]:
    """Step once per batch of sample indices; return [loss sum, correct, samples] where outputs were seen.

    The totals stay on the device until the pass ends, so no step waits for a copy to the host.
    `progress` is the tqdm bar's label (None: no bar, as on ranks other than 0).
    """
    loss_sums: list[Tensor] = []
    corrects: list[Tensor] = []
    seen = 0
    for indices in tqdm(batches, desc=progress, disable=None if progress else True, leave=False):
        labels = data.labels[indices]
        with clock.step():
            loss, outputs = optimizer_step(plan, parallel, optimizer, data.images[indices], labels)
        if outputs is not None and loss is not None:
            loss_sums.append(loss * len(labels))
            corrects.append((outputs.argmax(dim=1) == labels.to(outputs.device, non_blocking=True)).sum())
            seen += len(labels)
    return [_total(loss_sums), _total(corrects), float(seen)]


def _total(values: list[Tensor]) -> float:
    """Sum of per-step scalars, read back to the host once."""
    return float(torch.stack(values).sum()) if values else 0.0
