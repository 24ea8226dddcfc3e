"""What classifier workloads share: labelled uint8 images, cross-entropy, and accuracy by argmax, image by image."""

from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.data.provenance import Provenance
from parabench.workloads.contract import WorkloadData


def correct(outputs: Tensor, targets: Tensor) -> Tensor:
    """How many rows of class scores pick their target class (a device-side count)."""
    return (outputs.argmax(dim=1) == targets).sum()


@torch.no_grad()
def hits(
    model: nn.Module,
    images: Tensor,
    labels: Tensor,
    to_inputs: Callable[[Tensor], Tensor],
    batch_size: int,
    device: torch.device,
) -> Tensor:
    """1.0 for every image classified correctly, else 0.0, with the model in evaluation mode."""
    was_training = model.training
    model.eval()
    outcomes = []
    for start in range(0, len(labels), batch_size):
        inputs = to_inputs(images[start : start + batch_size].to(device, non_blocking=True))
        predictions = model(inputs).argmax(dim=1).cpu()
        outcomes.append((predictions == labels[start : start + batch_size]).float())
    model.train(was_training)
    return torch.cat(outcomes)


@dataclass(frozen=True)
class LabelledImages(WorkloadData):
    """A classifier's data: uint8 images and labels to train on and to test on, scored by cross-entropy and
    argmax accuracy. A workload says how images become model inputs, for training and for testing. origin: the
    data_origin sentence; provenance_record: the prepared dataset's record (None for images made otherwise);
    epoch_test_images: how many test images (the first ones) are scored after every epoch (None: all of them; the
    evaluate stage always scores all)."""

    train_images: Tensor
    train_labels: Tensor
    test_images: Tensor
    test_labels: Tensor
    eval_batch_size: int
    origin: str
    provenance_record: Provenance | None = field(default=None, kw_only=True)
    epoch_test_images: int | None = field(default=None, kw_only=True)

    @property
    def train_units(self) -> int:
        return len(self.train_labels)

    def train_batch(self, epoch: int, indices: Tensor) -> Batch:
        return Batch(self.train_images[indices], self.train_labels[indices])

    @abstractmethod
    def test_inputs(self, images: Tensor) -> Tensor:
        """Test images (on the device) as model inputs: the same view every time."""

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return F.cross_entropy(outputs, targets)

    def tally(self, outputs: Tensor, targets: Tensor) -> dict[str, Tensor]:
        return {"acc": correct(outputs, targets)}

    def item_scores(self, model: nn.Module, split: str, device: torch.device) -> Tensor:
        if split != "test":
            raise ValueError(f"a classifier's data has a train and a test split, not {split!r}")
        return self.test_hits(model, device)

    def epoch_scores(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        return self.summarize("test", self.test_hits(model, device, self.epoch_test_images))

    def test_hits(self, model: nn.Module, device: torch.device, count: int | None = None) -> Tensor:
        """`hits` on the first `count` test images (None: all of them)."""
        return hits(
            model, self.test_images[:count], self.test_labels[:count], self.test_inputs, self.eval_batch_size, device
        )
