"""The dataset registry: each dataset's params section, and how it downloads and prepares itself."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parabench.data import fashion_mnist, hotdog, miniimagenet
from parabench.data.source import DataSource
from parabench.data.training_images import (
    TrainingImages,
    fashion_mnist_training_images,
    hotdog_training_images,
    miniimagenet_training_images,
)


@dataclass(frozen=True)
class Dataset:
    """A dataset's params.yaml section model, its download (raw folder, section), its prepare (raw, out), and its
    prepared training images (for a synthetic workload that times on real pixels)."""

    source_model: type[DataSource]
    download: Callable[[Path, Any], object]
    prepare: Callable[[Path, Path], None]
    training_images: Callable[[Path], TrainingImages]


def _download_fashion_mnist(dest_dir: Path, section: DataSource) -> None:
    fashion_mnist.download(dest_dir, section.source)


DATASETS: dict[str, Dataset] = {
    "fashion_mnist": Dataset(DataSource, _download_fashion_mnist, fashion_mnist.prepare, fashion_mnist_training_images),
    "hotdog": Dataset(DataSource, hotdog.download, hotdog.prepare, hotdog_training_images),
    "miniimagenet": Dataset(miniimagenet.MiniImagenetSource, miniimagenet.download, miniimagenet.prepare,
                            miniimagenet_training_images),
}
