"""Load what prepare wrote: the train and test arrays, checked against meta.json, and the data_origin sentence."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parabench.data.class_folders import SPLITS
from parabench.data.hotdog.sources import IMAGE_SIZE
from parabench.errors import DataError
from parabench.io import read_json

RERUN = "run `dvc repro prepare@hotdog` again"
FILES = ["meta.json"] + [f"{split}_{kind}.npy" for split in SPLITS for kind in ("images", "labels")]


@dataclass(frozen=True)
class PreparedHotdog:
    """The prepared images (uint8 N x 3 x 256 x 256) and labels (int64 indices into classes), the class names in
    label order, and the data_origin sentence that results must quote."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    classes: tuple[str, ...]
    data_origin: str


def load_prepared(out_dir: Path) -> PreparedHotdog:
    """The prepared arrays and their data_origin sentence, checked against meta.json (shapes, dtypes, labels)."""
    missing = [name for name in FILES if not (out_dir / name).is_file()]
    if missing:
        raise DataError(
            f"{out_dir} lacks the prepared hotdog files {', '.join(missing)}; run `dvc repro prepare@hotdog` first"
        )
    meta = _read_meta(out_dir / "meta.json")
    classes = tuple(meta["classes"])
    arrays = {}
    for split in SPLITS:
        arrays[f"{split}_images"], arrays[f"{split}_labels"] = _load_split(out_dir, split, meta)
    return PreparedHotdog(**arrays, classes=classes, data_origin=meta["data_origin"])


def _read_meta(path: Path) -> dict[str, Any]:
    """A prepared meta.json: classes, counts and class_counts per split, image_size and data_origin."""
    try:
        meta = read_json(path)
        if (
            meta["image_size"] == list(IMAGE_SIZE)
            and all(isinstance(name, str) for name in meta["classes"])
            and all(list(meta["class_counts"][split]) == meta["classes"] for split in SPLITS)
            and all(sum(meta["class_counts"][split].values()) == meta["counts"][split] for split in SPLITS)
            and isinstance(meta["data_origin"], str)
        ):
            return meta
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    raise DataError(f"{path} is not what prepare writes; {RERUN}")


def _load_split(out_dir: Path, split: str, meta: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """One split's images and labels, checked for dtype, shape and per-class counts against meta.json."""
    try:
        images = np.load(out_dir / f"{split}_images.npy", allow_pickle=False)
        labels = np.load(out_dir / f"{split}_labels.npy", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise DataError(f"{out_dir}/{split}_*.npy do not load as arrays ({error}); {RERUN}") from error
    expected_counts = list(meta["class_counts"][split].values())
    if (
        images.dtype != np.uint8
        or images.shape != (meta["counts"][split], 3, *IMAGE_SIZE)
        or labels.dtype != np.int64
        or labels.shape != (len(images),)
        or (labels.size and not 0 <= labels.min() <= labels.max() < len(expected_counts))
        or np.bincount(labels, minlength=len(expected_counts)).tolist() != expected_counts
    ):
        raise DataError(
            f"{out_dir}/{split}_*.npy are not what prepare writes (images {images.dtype} {images.shape}, labels "
            f"{labels.dtype} {labels.shape}; meta.json says {meta['counts'][split]} images, per class "
            f"{expected_counts}); {RERUN}"
        )
    return images, labels
