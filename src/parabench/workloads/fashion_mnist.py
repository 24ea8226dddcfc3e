"""`fashion_mnist`: d2l's ResNet-18 variant trained with SGD on Fashion-MNIST (seeds 002 and 003)."""

from pathlib import Path
from typing import Annotated, Any

import torch
from pydantic import Field, model_validator
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.data.fashion_mnist import FASHION_MNIST
from parabench.models.d2l_resnet18 import d2l_resnet18
from parabench.workloads.classification import LabelledImages
from parabench.workloads.contract import Question, TrainSettings, Workload

NUM_CLASSES = 10


class FashionMnistSettings(TrainSettings):
    """SGD's momentum and weight decay, a fixed training subset, the test batch, how many test images are scored
    after every epoch, and the ResNet's width."""

    momentum: Annotated[float, Field(ge=0, lt=1)]
    weight_decay: Annotated[float, Field(ge=0)]
    train_subset: Annotated[int, Field(ge=1)] | None
    eval_batch_size: Annotated[int, Field(ge=1)]
    epoch_test_images: Annotated[int, Field(ge=1)] | None  # scored after every epoch (None: all 10,000)
    width: Annotated[int, Field(ge=1)]  # channels of the first ResNet stage (64 in the seeds)

    @model_validator(mode="after")
    def _subset_holds_a_batch(self) -> "FashionMnistSettings":
        if self.train_subset is not None and self.train_subset < self.batch_size:
            raise ValueError(
                f"train_subset: {self.train_subset} is smaller than batch_size: {self.batch_size}, so an epoch "
                f"holds no full batch; raise train_subset to at least {self.batch_size} or lower batch_size"
            )
        return self


def to_inputs(images: Tensor) -> Tensor:
    """uint8 pixels to floats in [0, 1], as d2l's ToTensor does."""
    return images.float().div_(255.0)


def fixed_subset(images: Tensor, labels: Tensor, size: int | None, seed: int) -> tuple[Tensor, Tensor]:
    """A fixed, seeded random subset of `size` samples (all of them when size is None or too large)."""
    if size is None or size >= len(labels):
        return images, labels
    chosen = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))[:size]
    return images[chosen], labels[chosen]


class FashionMnistData(LabelledImages):
    """Images as uint8 (N, 1, 28, 28) and labels (N,) for training (the fixed subset) and testing."""

    def transform(self, batch: Batch) -> Batch:
        return Batch(to_inputs(batch.inputs), batch.targets)

    def test_inputs(self, images: Tensor) -> Tensor:
        return to_inputs(images)


class FashionMnist(Workload[FashionMnistSettings]):
    """Seed 003's experiment: classify Fashion-MNIST with d2l's ResNet-18, SGD, cross-entropy."""

    name = "fashion_mnist"
    question = Question(
        "003",
        "d2l's concise multi-GPU training: ResNet-18 on Fashion-MNIST",
        "How much faster does ResNet-18 train on Fashion-MNIST when each device holds a replica and the gradients are "
        "averaged, and what do the strategies lose to communication?",
    )
    dataset = "fashion_mnist"
    settings_model = FashionMnistSettings
    primary_metric = "test_acc"

    def build_model(self, settings: FashionMnistSettings) -> nn.Sequential:
        return d2l_resnet18(NUM_CLASSES, in_channels=1, width=settings.width)

    def unit_shape(self, settings: FashionMnistSettings) -> tuple[int, ...]:
        return FASHION_MNIST.image_shape

    def optimizer(self, groups: list[dict[str, Any]], settings: FashionMnistSettings) -> torch.optim.Optimizer:
        return torch.optim.SGD(groups, momentum=settings.momentum, weight_decay=settings.weight_decay)

    def open(self, prepared: Path | None, settings: FashionMnistSettings) -> FashionMnistData:
        assert prepared is not None
        data = FASHION_MNIST.load_prepared(prepared)
        train, test = data.splits["train"], data.splits["test"]
        train_images, train_labels = fixed_subset(
            torch.from_numpy(train.images), torch.from_numpy(train.labels), settings.train_subset, settings.seed
        )
        return FashionMnistData(
            train_images,
            train_labels,
            torch.from_numpy(test.images),
            torch.from_numpy(test.labels),
            settings.eval_batch_size,
            FASHION_MNIST.origin_sentence(data.provenance),
            provenance_record=data.provenance,
            epoch_test_images=settings.epoch_test_images,
        )
