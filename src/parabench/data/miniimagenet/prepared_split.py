"""One prepared split: images, labels indexing sorted wnids, and how many images each class has."""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PreparedSplit:
    """One split: images (N, 3, 84, 84) uint8, labels (N,) int64 indexing class_ids (wnids, sorted)."""

    images: np.ndarray
    labels: np.ndarray
    class_ids: tuple[str, ...]


def split_by_class(images: np.ndarray, wnids: list[str]) -> PreparedSplit:
    """A split from images already ordered by (class, name) and the wnid of each row."""
    class_ids = tuple(sorted(set(wnids)))
    index = {wnid: label for label, wnid in enumerate(class_ids)}
    labels = np.fromiter((index[wnid] for wnid in wnids), dtype=np.int64, count=len(wnids))
    return PreparedSplit(images=images, labels=labels, class_ids=class_ids)


def class_counts(data: PreparedSplit) -> np.ndarray:
    """Images per class, in class_ids order."""
    return np.bincount(data.labels, minlength=len(data.class_ids))
