"""The lifecycle every dataset shares, written once (torchvision's way: a dataset declares its files, and one
`download` runs them): get the raw data, record its origin, prepare it once into arrays, load it back checked.

A dataset is an instance of a subclass of `Dataset`: its attributes declare what it is (splits, published files
with their pins, official size, image shape, the folder names), and its few hooks do what truly differs: which
files a local folder must hold, how the published files unpack, how the raw layout reads into arrays (collecting
every problem), whether the mirror holds a stand-in, and how its data is worded in the data_origin sentence.
"""

import logging
import shutil
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np

from parabench.data.fetch import MIRROR_ENV, SHA256SUMS, RemoteFile, fetch, mirror_root, record_sha256
from parabench.data.prepared import Prepared, SplitArrays, read_prepared, write_prepared
from parabench.data.provenance import (
    ORIGIN_FILE,
    Origin,
    OriginKind,
    Provenance,
    forget_origin,
    origin_source,
    read_origin,
    record_origin,
)
from parabench.data.safe_pickle import file_sha256
from parabench.data.source import DataSource
from parabench.errors import DataError
from parabench.io import staged_folder

MAX_LISTED_PROBLEMS = 100
Phrases = tuple[tuple[str, str], ...]  # what the data is: (text, details) pairs; details go in parentheses

logger = logging.getLogger("parabench.data")


@dataclass(frozen=True)
class Decoded:
    """What a dataset's reader found in a raw folder: its splits, the layout they were read from, and whether that
    layout's split files are the published ones (None: the layout has no split files)."""

    splits: dict[str, SplitArrays]
    layout: str
    official_split_files: bool | None = None


SourceT = TypeVar("SourceT", bound=DataSource)  # a dataset's params section: DataSource or its own subclass


@dataclass(frozen=True, kw_only=True)
class Dataset(ABC, Generic[SourceT]):
    """A dataset, declared by its attributes; the lifecycle methods below run for every dataset alike.

    name: its stages' and params section's name (download@<name>, data.<name>); title: how messages name it;
    splits: in order; mirror_folder: its folder under $PARABENCH_DATA_MIRROR; image_shape: (C, H, W) of a
    prepared image; official_classes and official_images_per_class: the published set's size per split;
    checksum_algorithm: what its published files are pinned by; resize: how images were brought to image_shape;
    local_detail: origin.json's note for a local folder; stand_in_kind and stand_in_detail: how a mirror folder
    holding no published file but a copy in the local layout is recorded (None: the mirror holds only the files).
    """

    name: str
    title: str
    splits: tuple[str, ...]
    mirror_folder: str
    image_shape: tuple[int, int, int]
    official_classes: dict[str, int]
    official_images_per_class: dict[str, int]
    source_model: type[DataSource] = DataSource
    checksum_algorithm: str = "sha256"
    resize: str = "none: the images are stored as published"
    local_detail: str = "a local folder, checked to be in the layout, copied without checksum verification"
    stand_in_kind: OriginKind | None = None
    stand_in_detail: str = ""

    # --- what each dataset declares or does its own way ---------------------------------------------------------

    @property
    @abstractmethod
    def resources(self) -> tuple[RemoteFile, ...]:
        """Every file the dataset's publishers serve, with its pin."""

    @property
    @abstractmethod
    def folder_layout(self) -> str:
        """What a local folder must hold, in words (for messages)."""

    @abstractmethod
    def local_files(self, folder: Path, section: SourceT, to_fix: str) -> list[Path]:
        """The files under `folder` that make the dataset's raw folder, after checking its layout: one DataError
        listing every problem (ending with `to_fix`) when it is wrong."""

    @abstractmethod
    def read(self, raw_dir: Path) -> Decoded:
        """Read the raw folder into per-split arrays; one DataError listing every problem found when any is."""

    def official_files(self, section: SourceT) -> tuple[RemoteFile, ...]:
        """The published files a download fetches (all of them, unless the section picks some)."""
        return self.resources

    def unpack(self, raw_dir: Path, section: SourceT) -> None:
        """Turn the fetched files into the raw layout (e.g. extract an archive); nothing to do by default."""

    def holds_stand_in(self, mirror_dir: Path, section: SourceT) -> bool:
        """Whether the mirror folder holds a copy in the local layout to use instead of the published files."""
        return False

    def describe(self, provenance: Provenance) -> Phrases:
        """What the data is, as (text, details) pairs: the full set, or a SAMPLE of it, and its size per split."""
        counts = provenance.counts
        total = sum(counts.values())
        sizes = ", ".join(f"{count:,} {split}" for split, count in counts.items())
        if provenance.complete:
            return ((f"the full {self.title}", f"{total:,} images: {sizes}"),)
        official = sum(provenance.official_counts.values())
        return ((f"{self.title} SAMPLE: {total:,} of the official {official:,} images", sizes),)

    # --- the lifecycle --------------------------------------------------------------------------------------------

    def download(self, raw_dir: Path, section: SourceT) -> Origin:
        """Fill raw_dir and record where its files came from in origin.json (forgotten first, so a failure leaves no
        stale record): a local `source` folder, copied after checking its layout; else, from the mirror, a stand-in
        in that layout when it holds one instead of the published files; else the published files (the mirror's
        copy first, then each URL), verified against their pins, and unpacked."""
        forget_origin(raw_dir)
        if section.source != "download":
            folder = Path(section.source)
            if not folder.is_dir():
                raise DataError(
                    f"the {self.title} source folder {folder} does not exist (params.yaml data.{self.name}.source); "
                    "set it to an existing folder or to download"
                )
            files = self.local_files(folder, section, self.local_fix)
            return self._copy(folder, files, raw_dir, "local", self.local_detail)
        root = mirror_root()
        mirror_dir = root / self.mirror_folder if root is not None else None
        if mirror_dir is not None and self.stand_in_kind is not None and self.holds_stand_in(mirror_dir, section):
            files = self.local_files(mirror_dir, section, self.stand_in_fix)
            return self._copy(mirror_dir, files, raw_dir, self.stand_in_kind, self.stand_in_detail)
        return self._fetch_official(raw_dir, section, mirror_dir)

    def prepare(self, raw_dir: Path, out_dir: Path) -> Prepared:
        """Read the raw folder once into arrays and write them, with meta.json and the provenance record, into a
        fresh out_dir all at once; every problem in one error, and then nothing is written."""
        origin = read_origin(raw_dir)
        decoded = self.read(raw_dir)
        for arrays in decoded.splits.values():
            assert arrays.images.dtype == np.uint8 and arrays.images.shape[1:] == self.image_shape
            assert arrays.labels.dtype == np.int64 and arrays.labels.shape == (len(arrays.images),)
        prepared = Prepared(decoded.splits, self._provenance(origin, raw_dir, decoded))
        write_prepared(out_dir, prepared, image_shape=self.image_shape, resize=self.resize)
        logger.info("prepared %s: %s", self.name, self.origin_sentence(prepared.provenance))
        return prepared

    def load_prepared(self, out_dir: Path) -> Prepared:
        """What prepare wrote in out_dir, checked against its meta.json."""
        return read_prepared(out_dir, dataset=self.name, splits=self.splits, image_shape=self.image_shape)

    # --- the record in words --------------------------------------------------------------------------------------

    def origin_sentence(self, provenance: Provenance) -> str:
        """The data_origin sentence: what the data is, with its details, then where it came from."""
        what = "".join(f"{text} ({details})" if details else text for text, details in self.describe(provenance))
        return f"{what}; {origin_source(provenance)}"

    def origin_summary(self, provenance: Provenance) -> str:
        """What the data is, without the details: short enough for a table."""
        return "".join(text for text, _ in self.describe(provenance))

    def origin_tag(self, provenance: Provenance) -> str:
        """What the data is in a few words, for a metrics column: the full set, or a SAMPLE of it (how many of its
        images); a full set that is not checksum-verified, or any set from a local folder, says so."""
        found, official = sum(provenance.counts.values()), sum(provenance.official_counts.values())
        where = f", {provenance.kind} folder" if provenance.kind in ("local", "unrecorded") else ""
        if provenance.complete:
            return f"full {self.title}" + (where or ("" if provenance.verified else ", unverified"))
        return f"{self.title} SAMPLE, {found:,} of {official:,}{where}"

    # --- messages -------------------------------------------------------------------------------------------------

    def problem_report(self, folder: Path, problems: Sequence[str], to_fix: str) -> str:
        """One message naming the folder, listing its problems (the first hundred, then a count), the layout it must
        have, and what to do."""
        listed = "\n".join(f"  - {problem}" for problem in problems[:MAX_LISTED_PROBLEMS])
        if len(problems) > MAX_LISTED_PROBLEMS:
            listed += f"\n  ... and {len(problems) - MAX_LISTED_PROBLEMS} more"
        return (
            f"the {self.title} folder {folder} has {len(problems)} problem(s):\n{listed}\n"
            f"It must hold {self.folder_layout}.\nTo fix: {to_fix}"
        )

    @property
    def local_fix(self) -> str:
        """What to do when a local source folder's layout is wrong."""
        return f"complete the folder, or set params.yaml data.{self.name}.source to another such folder or to download."

    @property
    def stand_in_fix(self) -> str:
        """What to do when the mirror's stand-in folder's layout is wrong."""
        names = ", ".join(remote.name for remote in self.resources)
        return (
            f"repair the mirror's {self.mirror_folder}/ folder, put the published files ({names}) in it, or point "
            f"params.yaml data.{self.name}.source to another folder (or unset {MIRROR_ENV} to download them)."
        )

    @property
    def prepare_fix(self) -> str:
        """What to do when the raw folder does not read."""
        return (
            f"repair the source folder (params.yaml data.{self.name}.source) or set source: download, then run "
            f"`dvc repro download@{self.name} prepare@{self.name}`."
        )

    def fetch_hint(self, remote: RemoteFile) -> str:
        """What to do when no source delivered a verified copy of `remote`."""
        pin = f" ({remote.pin[0]} {remote.pin[1]})" if remote.pin is not None else ""
        stand_in = f" (the mirror's {self.mirror_folder}/ may hold such a folder instead)" if self.stand_in_kind else ""
        return (
            f"To fix: set {MIRROR_ENV} to a folder holding {self.mirror_folder}/{remote.name}{pin}, or point "
            f"params.yaml data.{self.name}.source to a local folder holding {self.folder_layout}{stand_in}."
        )

    # --- the shared steps -----------------------------------------------------------------------------------------

    def _copy(self, folder: Path, files: list[Path], raw_dir: Path, kind: OriginKind, detail: str) -> Origin:
        """Copy the files (kept at their place under `folder`) into a fresh raw_dir with origin.json, all at once.

        A copied file the publishers serve unpinned gets its sha256 recorded in SHA256SUMS, as a fetch would, for
        prepare to verify before reading it (a pickle is never unpickled unverified)."""
        logger.warning("copying %s from %s without checksum verification", self.title, folder)
        first_use = {remote.name for remote in self.resources if remote.pin is None}
        with staged_folder(raw_dir) as staging:
            for path in files:
                target = staging / path.relative_to(folder)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                if target.parent == staging and target.name in first_use:
                    record_sha256(staging, target.name, file_sha256(target))
            return record_origin(
                staging, dataset=self.name, kind=kind, source=str(folder), verified=False, detail=detail
            )

    def _fetch_official(self, raw_dir: Path, section: SourceT, mirror_dir: Path | None) -> Origin:
        """Fetch the published files (mirror first), unpack them, and record how far they were verified; on failure
        a raw_dir this call created is removed."""
        remotes = self.official_files(section)
        created = not raw_dir.exists()
        try:
            fetched = [fetch(remote, raw_dir, mirror_dir, hint=self.fetch_hint(remote)) for remote in remotes]
            self.unpack(raw_dir, section)
        except DataError:
            if created:
                shutil.rmtree(raw_dir, ignore_errors=True)
            raise
        return record_origin(
            raw_dir,
            dataset=self.name,
            kind="official",
            source=", ".join(dict.fromkeys(file.source for file in fetched)),
            verified=all(remote.pin is not None for remote in remotes),
            detail=_verification_note(remotes),
        )

    def _provenance(self, origin: Origin | None, raw_dir: Path, decoded: Decoded) -> Provenance:
        """The record of prepared data: its origin (or the raw folder, unrecorded), the counts found, the official
        size."""
        where = (
            origin.model_dump(exclude={"dataset"})
            if origin is not None
            else {"kind": "unrecorded", "source": str(raw_dir), "verified": False, "detail": f"no {ORIGIN_FILE}"}
        )
        return Provenance(
            dataset=self.name,
            **where,
            checksum_algorithm=self.checksum_algorithm,
            layout=decoded.layout,
            class_counts={split: decoded.splits[split].class_counts() for split in self.splits},
            official_classes=self.official_classes,
            official_images_per_class=self.official_images_per_class,
            official_split_files=decoded.official_split_files,
        )


def _verification_note(remotes: Sequence[RemoteFile]) -> str:
    """origin.json's note on fetched files: which were checked against which pin, which were trusted on first use."""
    by_algorithm: dict[str, list[str]] = {}
    for remote in remotes:
        if remote.pin is not None:
            by_algorithm.setdefault(remote.pin[0], []).append(remote.name)
    notes = [f"{', '.join(names)} {algorithm}-verified" for algorithm, names in by_algorithm.items()]
    unpinned = [remote.name for remote in remotes if remote.pin is None]
    if unpinned:
        notes.append(
            f"{', '.join(unpinned)} not pinned (no checksum is published): trusted on first download, sha256 "
            f"recorded in {SHA256SUMS}"
        )
    return "; ".join(notes)
