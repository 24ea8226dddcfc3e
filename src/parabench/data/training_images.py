"""Each prepared dataset's training images as one uint8 array: the real pixels a synthetic workload can time on."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parabench.data import fashion_mnist, hotdog, miniimagenet
from parabench.io import read_json


@dataclass(frozen=True)
class TrainingImages:
    """uint8 training images, N x C x H x W (C is 1 for grey, 3 for RGB), and their dataset's data_origin sentence."""

    images: np.ndarray
    data_origin: str


def fashion_mnist_training_images(prepared: Path) -> TrainingImages:
    """The 28 x 28 grey training images, one channel."""
    images = fashion_mnist.load_prepared(prepared)["train_images"]
    return TrainingImages(images[:, np.newaxis], read_json(prepared / "meta.json")["data_origin"])


def hotdog_training_images(prepared: Path) -> TrainingImages:
    """The 256 x 256 RGB training photos."""
    data = hotdog.load_prepared(prepared)
    return TrainingImages(data.train_images, data.data_origin)


def miniimagenet_training_images(prepared: Path) -> TrainingImages:
    """The 84 x 84 RGB images of the training split (its 64 classes)."""
    data = miniimagenet.load_prepared(prepared)
    return TrainingImages(data.splits["train"].images, data.data_origin)
