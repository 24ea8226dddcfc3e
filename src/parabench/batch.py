"""One step's data as strategies see it: inputs and targets whose dim 0 is the unit they split."""

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Batch:
    """Inputs and targets aligned on dim 0: a sample for a classifier, a whole episode for few-shot learning.

    Data-parallel strategies give each replica a slice of dim 0; pipelines cut dim 0 into micro-batches.
    `unit_seeds` (int64, on the CPU) gives each training unit its own random seed, drawn by the engine from
    (run seed, epoch, unit index): a transform that augments seeds each unit with its own, so a unit is
    augmented alike whichever replica or process count trains it.
    """

    inputs: Tensor
    targets: Tensor
    unit_seeds: Tensor | None = None

    def __len__(self) -> int:
        return self.inputs.shape[0]

    def to(self, device: torch.device) -> "Batch":
        """The batch on `device` (asynchronous where the device allows); unit seeds stay on the CPU."""
        return Batch(
            self.inputs.to(device, non_blocking=True), self.targets.to(device, non_blocking=True), self.unit_seeds
        )

    def split(self, parts: int) -> list["Batch"]:
        """The batch cut along dim 0 into `parts` consecutive micro-batches of equal size (it must divide)."""
        assert len(self) % parts == 0, f"{parts} micro-batches do not divide a batch of {len(self)}"
        size = len(self) // parts
        seeds = self.unit_seeds
        return [
            Batch(
                self.inputs[start : start + size],
                self.targets[start : start + size],
                None if seeds is None else seeds[start : start + size],
            )
            for start in range(0, len(self), size)
        ]
