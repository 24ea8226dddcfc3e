"""Where a dataset's data came from: origin.json, written by download, and the provenance record prepare makes of it.

The record is data (results files carry it as a dict); the sentences results quote are rendered from it, never
parsed back. `origin_source` renders where the data came from; each dataset words what the data is (dataset.py).
"""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from parabench.errors import DataError
from parabench.io import read_json, write_json

ORIGIN_FILE = "origin.json"
OriginKind = Literal["official", "sample", "local"]


class Origin(BaseModel):
    """origin.json: which dataset, what kind of copy, from where, whether checksum-verified, and a short note.

    kind: official (the published files, fetched; verified says whether every file matched a pinned checksum),
    sample (a mirror folder holding a real sample in the documented layout), local (a user's own folder, or a
    mirror's stand-in that is not the dataset's own data).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    kind: OriginKind
    source: str
    verified: bool
    detail: str


class Provenance(BaseModel):
    """Where prepared data came from (origin.json's fields; kind `unrecorded` when the raw folder had none, source
    then being that folder), the algorithm its official files are pinned by, the layout it was read from, the images
    found per class of each split, and the official set's size: classes per split, images per class."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    kind: Literal["official", "sample", "local", "unrecorded"]
    source: str
    verified: bool
    detail: str
    checksum_algorithm: str
    layout: str
    class_counts: dict[str, dict[str, int]]
    official_classes: dict[str, int]
    official_images_per_class: dict[str, int]
    official_split_files: bool | None = None  # whether the layout's split files are the published ones (None: none)

    @property
    def counts(self) -> dict[str, int]:
        """Images found per split."""
        return {split: sum(found.values()) for split, found in self.class_counts.items()}

    @property
    def official_counts(self) -> dict[str, int]:
        """Images per split in the official set."""
        return {
            split: classes * self.official_images_per_class[split] for split, classes in self.official_classes.items()
        }

    @property
    def complete(self) -> bool:
        """Whether the data found has the official set's shape: its splits, and in each its number of classes, each
        with its number of images."""
        return list(self.class_counts) == list(self.official_classes) and all(
            len(found) == self.official_classes[split]
            and all(count == self.official_images_per_class[split] for count in found.values())
            for split, found in self.class_counts.items()
        )


def record_origin(raw_dir: Path, *, dataset: str, kind: OriginKind, source: str, verified: bool, detail: str) -> Origin:
    """Write raw_dir/origin.json atomically and return what it says."""
    origin = Origin(dataset=dataset, kind=kind, source=source, verified=verified, detail=detail)
    write_json(raw_dir / ORIGIN_FILE, origin.model_dump())
    return origin


def forget_origin(raw_dir: Path) -> None:
    """Delete raw_dir/origin.json before the folder's files change, so a failed download leaves no stale record."""
    (raw_dir / ORIGIN_FILE).unlink(missing_ok=True)


def read_origin(raw_dir: Path) -> Origin | None:
    """What raw_dir/origin.json says, or None when the folder has none (filled before origins were recorded)."""
    path = raw_dir / ORIGIN_FILE
    if not path.is_file():
        return None
    try:
        return Origin.model_validate(read_json(path))
    except (ValueError, ValidationError) as error:
        raise DataError(
            f"{path} is not a valid origin record ({error}); it must be a JSON object with dataset, "
            "kind (official, sample or local), source, verified (true or false) and detail. "
            "Delete it and re-run the download stage to record it again."
        ) from error


def origin_source(provenance: Provenance) -> str:
    """Where the data came from and whether it was checksum-verified: the end of a data_origin sentence."""
    p = provenance
    if p.kind == "unrecorded":
        return f"of unrecorded origin ({p.source} has no {ORIGIN_FILE}; re-run the download stage to record it)"
    if p.kind == "official" and p.verified:
        return f"official files from {p.source}, {p.checksum_algorithm}-verified"
    if p.kind == "official":
        return f"official files from {p.source}, not all checksum-verified ({p.detail})"
    if p.kind == "sample":
        return f"from the mirror folder {p.source} (a sample, not checksum-verified)"
    return f"from the local folder {p.source} (not checksum-verified)"
