"""Synthetic data as seed 001 makes it: random normal images and random classes, scored by MSE on one-hot targets.

There is nothing to learn and nothing to score: the data exists to time training. Every unit's image and class
come from the run's seed, so every strategy and process count trains on the same numbers.
"""

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.workloads.contract import WorkloadData

NOT_APPLICABLE = "not applicable (synthetic data)"


@dataclass(frozen=True)
class RandomImages(WorkloadData):
    """`units` images of `shape` from N(0, 1) and a class in [0, num_classes) for each, drawn once from `seed`."""

    images: Tensor
    classes: Tensor
    num_classes: int
    seed: int

    @classmethod
    def draw(cls, units: int, shape: tuple[int, ...], num_classes: int, seed: int) -> "RandomImages":
        """Draw the images and classes from a generator seeded with `seed`."""
        generator = torch.Generator().manual_seed(seed)
        images = torch.randn((units, *shape), generator=generator)
        classes = torch.randint(0, num_classes, (units,), generator=generator)
        return cls(images, classes, num_classes, seed)

    @property
    def train_units(self) -> int:
        return len(self.classes)

    @property
    def data_origin(self) -> str:
        shape = "x".join(str(size) for size in self.images.shape[1:])
        return (f"synthetic: {self.train_units:,} random normal {shape} images with random classes among "
                f"{self.num_classes:,}; drawn from seed {self.seed}, no dataset")

    def train_batch(self, epoch: int, indices: Tensor) -> Batch:
        return Batch(self.images[indices], self.classes[indices])

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Seed 001's loss: the mean squared error against one-hot targets."""
        return F.mse_loss(outputs, F.one_hot(targets, self.num_classes).to(outputs.dtype))

    def tally(self, outputs: Tensor, targets: Tensor) -> dict[str, Tensor]:
        return {}

    def evaluate(self, model: nn.Module, split: str, device: torch.device) -> dict[str, float]:
        """No score: random classes have no accuracy to measure (the workload's labels say so in words)."""
        return {}
