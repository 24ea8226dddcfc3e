"""The dataset registry: each dataset's params section, and how it downloads and prepares itself."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parabench.data import fashion_mnist, hotdog, miniimagenet
from parabench.data.source import DataSource


@dataclass(frozen=True)
class Dataset:
    """A dataset's params.yaml section model, its download (raw folder, section) and its prepare (raw, out)."""

    source_model: type[DataSource]
    download: Callable[[Path, Any], object]
    prepare: Callable[[Path, Path], None]


def _download_fashion_mnist(dest_dir: Path, section: DataSource) -> None:
    fashion_mnist.download(dest_dir, section.source)


DATASETS: dict[str, Dataset] = {
    "fashion_mnist": Dataset(DataSource, _download_fashion_mnist, fashion_mnist.prepare),
    "hotdog": Dataset(DataSource, hotdog.download, hotdog.prepare),
    "miniimagenet": Dataset(miniimagenet.MiniImagenetSource, miniimagenet.download, miniimagenet.prepare),
}
