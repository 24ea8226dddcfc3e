"""The training loop's inner pass: one timed optimiser step per batch, with loss and tally totals."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch import Tensor
from tqdm import tqdm

from parabench.batch import Batch
from parabench.engine.timing import StepClock
from parabench.engine.trainer import Trainer, optimizer_step
from parabench.workloads import WorkloadData


class StepFailed(Exception):
    """A training step raised: which step of how many, and the error."""

    def __init__(self, step: int, steps: int, error: Exception):
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        super().__init__(f"step {step} of {steps}: {type(error).__name__}: {first_line}")
        self.step, self.steps, self.error = step, steps, error


@dataclass(frozen=True)
class PassTotals:
    """Sums over the units a process saw outputs for: the loss (times units), each tally, and the units."""

    loss: float
    tallies: dict[str, float]
    units: float

    @classmethod
    def combine(cls, parts: list["PassTotals"]) -> "PassTotals":
        """The totals of several processes together (a pipeline's early stages contribute none)."""
        tallies: dict[str, float] = {}
        for part in parts:
            for key, value in part.tallies.items():
                tallies[key] = tallies.get(key, 0.0) + value
        return cls(loss=sum(part.loss for part in parts), tallies=tallies, units=sum(part.units for part in parts))

    def means(self) -> dict[str, float]:
        """The mean loss and the mean of every tally per unit, named train_loss, train_<tally>."""
        return {"train_loss": self.loss / self.units,
                **{f"train_{key}": value / self.units for key, value in self.tallies.items()}}


def train_pass(trainer: Trainer, data: WorkloadData, batches: Iterable[Batch], steps: int, clock: StepClock,
               progress: str | None = None, after_step: Callable[[int], None] | None = None) -> PassTotals:
    """Step once per batch; sum the loss and the workload's tallies wherever this process has outputs.

    Each batch is assembled on the CPU before the clock starts (as a data loader would, ahead of time); the
    clock times moving it to the device, the transform, forward, backward and the update. The totals stay
    on the device until the pass ends, so no step waits for a copy to the host. `progress` labels the tqdm
    bar (None: no bar, as on ranks other than 0); `after_step(step)` runs after each step, off the clock.
    """
    losses: list[Tensor] = []
    tallies: dict[str, list[Tensor]] = {}
    units = 0
    bar = tqdm(batches, total=steps, desc=progress, disable=None if progress else True, leave=False)
    for step, batch in enumerate(bar, start=1):
        try:
            with clock.step():
                result, targets = optimizer_step(trainer, data, batch)
        except Exception as err:  # a lost peer's collective error, an out-of-memory: say at which step
            raise StepFailed(step, steps, err) from err
        if after_step is not None:
            after_step(step)
        if result.outputs is not None and result.loss is not None:
            targets = targets.to(result.outputs.device, non_blocking=True)
            losses.append(result.loss * len(targets))
            for key, value in data.tally(result.outputs, targets).items():
                tallies.setdefault(key, []).append(value)
            units += len(targets)
    return PassTotals(loss=_total(losses), tallies={key: _total(values) for key, values in tallies.items()},
                      units=float(units))


def _total(values: list[Tensor]) -> float:
    """Sum of per-step scalars, read back to the host once."""
    return float(torch.stack(values).sum()) if values else 0.0
