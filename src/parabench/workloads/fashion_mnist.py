"""`fashion_mnist`: d2l's ResNet-18 variant trained with SGD on Fashion-MNIST (seeds 002 and 003)."""

from pathlib import Path
from typing import Annotated

import torch
from pydantic import Field
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.data import fashion_mnist
from parabench.models.resnet import d2l_resnet18
from parabench.workloads.base import LabelledImages, TrainSettings, Workload

NUM_CLASSES = 10


class FashionMnistSettings(TrainSettings):
    """Adds the ResNet's width: channels of its first stage (64 in the seeds)."""

    width: Annotated[int, Field(ge=1)]


def build_model(settings: FashionMnistSettings) -> nn.Sequential:
    """The seeds' ResNet-18 for 1-channel 28x28 images, at the configured width."""
    return d2l_resnet18(NUM_CLASSES, in_channels=1, width=settings.width)


def load_data(prepared: Path) -> tuple[LabelledImages, LabelledImages]:
    """Train and test splits as uint8 (N, 1, 28, 28) tensors."""
    arrays = fashion_mnist.load_prepared(prepared)

    def split(name: str) -> LabelledImages:
        images = torch.from_numpy(arrays[f"{name}_images"]).unsqueeze(1)
        return LabelledImages(images=images, labels=torch.from_numpy(arrays[f"{name}_labels"]).long())

    return split("train"), split("test")


def to_inputs(images: Tensor) -> Tensor:
    """uint8 pixels to floats in [0, 1], as d2l's ToTensor does."""
    return images.float().div_(255.0)


WORKLOAD = Workload(
    name="fashion_mnist",
    dataset="fashion_mnist",
    input_shape=(1, 28, 28),
    settings_model=FashionMnistSettings,
    build_model=build_model,
    load_data=load_data,
    to_inputs=to_inputs,
    loss=F.cross_entropy,
)
