"""Images that exist to time training (seed 001): each with a random class, scored by MSE on one-hot targets.

There is nothing to learn and nothing to score: the images (random normal ones, or a dataset's real pixels) only
make the model work, and every unit's class is drawn from the run's seed, so every strategy and process count
trains on the same numbers.
"""

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.data.provenance import Provenance
from parabench.workloads.contract import WorkloadData

NOT_APPLICABLE = "n/a (synthetic data)"


@dataclass(frozen=True)
class TimingImages(WorkloadData):
    """Model-ready float images, a class in [0, num_classes) for each, and where the images came from: the
    data_origin sentence and, for a prepared dataset's pixels, its provenance record."""

    images: Tensor
    classes: Tensor
    num_classes: int
    origin: str
    provenance_record: Provenance | None = field(default=None, kw_only=True)

    @property
    def train_units(self) -> int:
        return len(self.classes)

    def train_batch(self, epoch: int, indices: Tensor) -> Batch:
        return Batch(self.images[indices], self.classes[indices])

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """Seed 001's loss: the mean squared error against one-hot targets."""
        return F.mse_loss(outputs, F.one_hot(targets, self.num_classes).to(outputs.dtype))

    def tally(self, outputs: Tensor, targets: Tensor) -> dict[str, Tensor]:
        return {}

    def item_scores(self, model: nn.Module, split: str, device: torch.device) -> None:
        """No score: random classes have no accuracy to measure (the workload's labels say so in words)."""
        return None
