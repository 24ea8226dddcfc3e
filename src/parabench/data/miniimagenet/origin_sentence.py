"""The data_origin sentence results quote: full set or SAMPLE with its size, the split files, and the source."""

from pathlib import Path

import numpy as np

from parabench.data.miniimagenet import sources
from parabench.data.miniimagenet.prepared_split import PreparedSplit, class_counts
from parabench.data.miniimagenet.sources import SPLITS, Layout
from parabench.data.origin import describe_origin, read_origin
from parabench.data.safe_pickle import file_sha256

OFFICIAL_CLASSES = {"train": 64, "val": 16, "test": 20}
OFFICIAL_IMAGES_PER_CLASS = 600
OFFICIAL_IMAGES = sum(OFFICIAL_CLASSES.values()) * OFFICIAL_IMAGES_PER_CLASS


def data_origin(raw_dir: Path, splits: dict[str, PreparedSplit], layout: Layout) -> str:
    """One sentence: full set or SAMPLE with its size, the split files (images layout), and where it came from."""
    classes = "/".join(str(len(splits[split].class_ids)) for split in SPLITS)
    per_class = np.concatenate([class_counts(splits[split]) for split in SPLITS])
    total = int(per_class.sum())
    full = all(len(splits[split].class_ids) == count for split, count in OFFICIAL_CLASSES.items()) and bool(
        (per_class == OFFICIAL_IMAGES_PER_CLASS).all()
    )
    if full:
        size = f"the full miniImageNet ({total:,} images, {classes} classes x {OFFICIAL_IMAGES_PER_CLASS})"
    else:
        low, high = int(per_class.min()), int(per_class.max())
        per_class_text = str(low) if low == high else f"{low} to {high}"
        size = (
            f"miniImageNet SAMPLE: {total:,} of the official {OFFICIAL_IMAGES:,} images "
            f"({classes} classes, {per_class_text} per class)"
        )
    if layout == "images":
        official = all(file_sha256(raw_dir / remote.name) == remote.sha256 for remote in sources.SPLIT_CSVS.values())
        if official:
            size += ", the official split files"
        else:
            size += ", split files cut to match" if not full else ", split files other than the official ones"
    return f"{size}; {describe_origin(read_origin(raw_dir), raw_dir)}"
