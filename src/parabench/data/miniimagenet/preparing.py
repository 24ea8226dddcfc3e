"""The prepare stage: decode the raw folder (either layout) once into arrays and meta.json, all at once."""

import logging
from pathlib import Path

import numpy as np

from parabench.data.miniimagenet.image_folder import read_image_folder
from parabench.data.miniimagenet.layout import layout_of_raw
from parabench.data.miniimagenet.origin_sentence import data_origin
from parabench.data.miniimagenet.pickles import read_pickles
from parabench.data.miniimagenet.prepared_split import PreparedSplit, class_counts
from parabench.data.miniimagenet.sources import DATASET, IMAGE_SIZE
from parabench.io import atomic_path, staged_folder, write_json

logger = logging.getLogger("parabench.data")


def prepare(raw_dir: Path, out_dir: Path) -> None:
    """Check and decode the raw folder (either layout) into {split}_images.npy, {split}_labels.npy and meta.json."""
    layout = layout_of_raw(raw_dir)
    splits = read_image_folder(raw_dir) if layout == "images" else read_pickles(raw_dir)
    meta = {
        "dataset": DATASET,
        "layout": layout,
        "image_size": list(IMAGE_SIZE),
        "counts": {split: len(data.labels) for split, data in splits.items()},
        "images_per_class": {split: _per_class_range(data) for split, data in splits.items()},
        "class_ids": {split: list(data.class_ids) for split, data in splits.items()},
        "class_counts": {split: class_counts(data).tolist() for split, data in splits.items()},
        "data_origin": data_origin(raw_dir, splits, layout),
    }
    with staged_folder(out_dir) as staging:
        for split, data in splits.items():
            _save_npy(staging / f"{split}_images.npy", data.images)
            _save_npy(staging / f"{split}_labels.npy", data.labels)
        write_json(staging / "meta.json", meta)
    logger.info("prepared miniImageNet: %s", meta["data_origin"])


def _per_class_range(data: PreparedSplit) -> dict[str, int]:
    """The fewest and most images any class of the split has."""
    counts = class_counts(data)
    return {"min": int(counts.min()), "max": int(counts.max())}


def _save_npy(path: Path, array: np.ndarray) -> None:
    """np.save to exactly `path`, atomically."""
    with atomic_path(path) as tmp, tmp.open("wb") as stream:
        np.save(stream, array, allow_pickle=False)
