"""Load what prepare wrote: every split's arrays, checked against meta.json, and the data_origin sentence."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parabench.data.miniimagenet.prepared_split import PreparedSplit
from parabench.data.miniimagenet.sources import IMAGE_SIZE, SPLITS
from parabench.errors import DataError
from parabench.io import read_json


@dataclass(frozen=True)
class PreparedMiniImagenet:
    """The prepared splits, keyed by SPLITS, and the data_origin sentence that results must quote."""

    splits: dict[str, PreparedSplit]
    data_origin: str


def load_prepared(out_dir: Path) -> PreparedMiniImagenet:
    """The prepared splits and their data_origin sentence, checked against meta.json."""
    names = ["meta.json"] + [f"{split}_{kind}.npy" for split in SPLITS for kind in ("images", "labels")]
    missing = [name for name in names if not (out_dir / name).is_file()]
    if missing:
        raise DataError(
            f"{out_dir} lacks the prepared miniImageNet files {', '.join(missing)}; "
            "run `dvc repro prepare@miniimagenet` first"
        )
    meta = _read_meta(out_dir / "meta.json")
    splits = {split: _load_split(out_dir, split, tuple(meta["class_ids"][split])) for split in SPLITS}
    return PreparedMiniImagenet(splits=splits, data_origin=meta["data_origin"])


def _read_meta(path: Path) -> dict[str, Any]:
    """A prepared meta.json, which must hold class_ids for every split and data_origin."""
    try:
        meta = read_json(path)
        if all(split in meta["class_ids"] for split in SPLITS) and isinstance(meta["data_origin"], str):
            return meta
    except (ValueError, KeyError, TypeError):
        pass
    raise DataError(f"{path} is not what prepare writes; run `dvc repro prepare@miniimagenet` again")


def _load_split(out_dir: Path, split: str, class_ids: tuple[str, ...]) -> PreparedSplit:
    """One prepared split, checked for shape, dtype and label range."""
    images = np.load(out_dir / f"{split}_images.npy", allow_pickle=False)
    labels = np.load(out_dir / f"{split}_labels.npy", allow_pickle=False)
    if (
        images.dtype != np.uint8
        or images.shape[1:] != (3, *IMAGE_SIZE)
        or labels.dtype != np.int64
        or labels.shape != (len(images),)
        or (labels.size and not 0 <= labels.min() <= labels.max() < len(class_ids))
    ):
        raise DataError(
            f"{out_dir}/{split}_*.npy are not what prepare writes (images {images.dtype} {images.shape}, "
            f"labels {labels.dtype} {labels.shape}); run `dvc repro prepare@miniimagenet` again"
        )
    return PreparedSplit(images=images, labels=labels, class_ids=class_ids)
