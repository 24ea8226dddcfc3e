"""The one on-disk form of every prepared dataset, written all at once and loaded back checked.

data/prepared/<dataset>/ holds, per split, {split}_images.npy (uint8 N x C x H x W, C 1 for grey, 3 for RGB) and
{split}_labels.npy (int64 indices into that split's classes), and meta.json: the dataset, the image shape, how
images were brought to it, the images per split, the class names per split in label order, and the provenance.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from parabench.data.provenance import Provenance
from parabench.errors import DataError
from parabench.io import read_json, staged_folder, write_json

META_FILE = "meta.json"
ARRAYS = ("images", "labels")


@dataclass(frozen=True)
class SplitArrays:
    """One split: images (uint8 N x C x H x W), labels (int64 indices into classes), class names in label order."""

    images: np.ndarray
    labels: np.ndarray
    classes: tuple[str, ...]

    def class_counts(self) -> dict[str, int]:
        """Images per class, in label order."""
        return dict(zip(self.classes, np.bincount(self.labels, minlength=len(self.classes)).tolist(), strict=True))


@dataclass(frozen=True)
class Prepared:
    """A prepared dataset: its splits by name, and where its data came from."""

    splits: dict[str, SplitArrays]
    provenance: Provenance


class PreparedMeta(BaseModel):
    """meta.json: one spelling of every key, for every dataset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    image_shape: tuple[int, int, int]
    resize: str
    counts: dict[str, int]
    classes: dict[str, list[str]]
    provenance: Provenance

    def consistent(self, dataset: str, splits: tuple[str, ...], image_shape: tuple[int, int, int]) -> bool:
        """Whether it describes `dataset` as declared, and its counts and classes agree with the provenance's."""
        found = self.provenance.class_counts
        return (
            (self.dataset, self.provenance.dataset, self.image_shape) == (dataset, dataset, image_shape)
            and list(self.counts) == list(self.classes) == list(found) == list(splits)
            and all(list(found[split]) == self.classes[split] for split in splits)
            and all(sum(found[split].values()) == self.counts[split] for split in splits)
        )


def split_by_class(images: np.ndarray, class_of_row: list[str]) -> SplitArrays:
    """A split from images already ordered by class and the class name of each row: classes sorted by name, each
    row labelled with its class's index."""
    classes = tuple(sorted(set(class_of_row)))
    index = {name: label for label, name in enumerate(classes)}
    labels = np.fromiter((index[name] for name in class_of_row), dtype=np.int64, count=len(class_of_row))
    return SplitArrays(images=images, labels=labels, classes=classes)


def write_prepared(out_dir: Path, prepared: Prepared, *, image_shape: tuple[int, int, int], resize: str) -> None:
    """Write the arrays and meta.json into a fresh out_dir, all at once (a failure leaves the earlier one)."""
    meta = PreparedMeta(
        dataset=prepared.provenance.dataset,
        image_shape=image_shape,
        resize=resize,
        counts={split: len(arrays.labels) for split, arrays in prepared.splits.items()},
        classes={split: list(arrays.classes) for split, arrays in prepared.splits.items()},
        provenance=prepared.provenance,
    )
    with staged_folder(out_dir) as staging:
        for split, arrays in prepared.splits.items():
            np.save(staging / f"{split}_images.npy", arrays.images, allow_pickle=False)
            np.save(staging / f"{split}_labels.npy", arrays.labels, allow_pickle=False)
        write_json(staging / META_FILE, meta.model_dump(mode="json"))


def read_prepared(
    out_dir: Path, *, dataset: str, splits: tuple[str, ...], image_shape: tuple[int, int, int]
) -> Prepared:
    """The prepared splits and provenance, checked against meta.json (shapes, dtypes, labels, images per class);
    each error names the file and says to run `dvc repro prepare@<dataset>`."""
    names = [META_FILE] + [f"{split}_{kind}.npy" for split in splits for kind in ARRAYS]
    missing = [name for name in names if not (out_dir / name).is_file()]
    if missing:
        raise DataError(
            f"{out_dir} lacks the prepared {dataset} files {', '.join(missing)}; run `dvc repro prepare@{dataset}` "
            "first"
        )
    meta = _read_meta(out_dir / META_FILE, dataset, splits, image_shape)
    arrays = {split: _read_split(out_dir, split, meta) for split in splits}
    return Prepared(splits=arrays, provenance=meta.provenance)


def _read_meta(path: Path, dataset: str, splits: tuple[str, ...], image_shape: tuple[int, int, int]) -> PreparedMeta:
    """meta.json, which must describe this dataset and agree with itself."""
    try:
        meta = PreparedMeta.model_validate(read_json(path))
        if meta.consistent(dataset, splits, image_shape):
            return meta
    except (ValueError, ValidationError):
        pass
    raise DataError(f"{path} is not what prepare writes; run `dvc repro prepare@{dataset}` again")


def _read_split(out_dir: Path, split: str, meta: PreparedMeta) -> SplitArrays:
    """One split's arrays, checked for dtype, shape, label range and images per class against meta.json."""
    rerun = f"run `dvc repro prepare@{meta.dataset}` again"
    try:
        images = np.load(out_dir / f"{split}_images.npy", allow_pickle=False)
        labels = np.load(out_dir / f"{split}_labels.npy", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise DataError(f"{out_dir}/{split}_*.npy do not load as arrays ({error}); {rerun}") from error
    expected = list(meta.provenance.class_counts[split].values())
    if (
        images.dtype != np.uint8
        or images.shape != (meta.counts[split], *meta.image_shape)
        or labels.dtype != np.int64
        or labels.shape != (len(images),)
        or (labels.size and not 0 <= labels.min() <= labels.max() < len(expected))
        or np.bincount(labels, minlength=len(expected)).tolist() != expected
    ):
        raise DataError(
            f"{out_dir}/{split}_*.npy are not what prepare writes (images {images.dtype} {images.shape}, labels "
            f"{labels.dtype} {labels.shape}; meta.json says {meta.counts[split]} images, per class {expected}); "
            f"{rerun}"
        )
    return SplitArrays(images=images, labels=labels, classes=tuple(meta.classes[split]))
