"""Where a raw data folder came from: recorded as origin.json by download, told in one phrase by prepare."""

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from parabench.errors import DataError
from parabench.io import read_json, write_json

ORIGIN_FILE = "origin.json"
OriginKind = Literal["official", "sample", "local"]


class DataOrigin(BaseModel):
    """origin.json: which dataset, what kind of copy, from where, whether checksum-verified, and a short note.

    kind: official (the published files, fetched; verified says whether every file matched a pinned checksum),
    sample (a mirror folder holding a real sample in the documented layout), local (a user's own folder).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset: str
    kind: OriginKind
    source: str
    verified: bool
    detail: str


def record_origin(
    raw_dir: Path, *, dataset: str, kind: OriginKind, source: str, verified: bool, detail: str
) -> DataOrigin:
    """Write raw_dir/origin.json atomically and return what it says."""
    origin = DataOrigin(dataset=dataset, kind=kind, source=source, verified=verified, detail=detail)
    write_json(raw_dir / ORIGIN_FILE, origin.model_dump())
    return origin


def forget_origin(raw_dir: Path) -> None:
    """Delete raw_dir/origin.json before the folder's files change, so a failed download leaves no stale record."""
    (raw_dir / ORIGIN_FILE).unlink(missing_ok=True)


def read_origin(raw_dir: Path) -> DataOrigin | None:
    """What raw_dir/origin.json says, or None when the folder has none (filled before origins were recorded)."""
    path = raw_dir / ORIGIN_FILE
    if not path.is_file():
        return None
    try:
        return DataOrigin.model_validate(read_json(path))
    except (ValueError, ValidationError) as error:
        raise DataError(
            f"{path} is not a valid origin record ({error}); it must be a JSON object with dataset, "
            "kind (official, sample or local), source, verified (true or false) and detail. "
            "Delete it and re-run the download stage to record it again."
        ) from error


def describe_origin(origin: DataOrigin | None, raw_dir: Path, *, checksum: str = "sha256") -> str:
    """Where the data came from and whether it was checksum-verified, as the end of a data_origin sentence.

    checksum: the algorithm the dataset's official files are pinned by (d2l publishes only sha1s).
    """
    if origin is None:
        return f"of unrecorded origin ({raw_dir} has no {ORIGIN_FILE}; re-run the download stage to record it)"
    if origin.kind == "official" and origin.verified:
        return f"official files from {origin.source}, {checksum}-verified"
    if origin.kind == "official":
        return f"official files from {origin.source}, not all checksum-verified ({origin.detail})"
    if origin.kind == "sample":
        return f"from the mirror folder {origin.source} (a sample, not checksum-verified)"
    return f"from the local folder {origin.source} (not checksum-verified)"


def origin_summary(sentence: str) -> str:
    """A data_origin sentence reads `<what the data is (details)>; <where it came from>`: its first part without
    the parenthesised details, short enough for a table (e.g. "miniImageNet SAMPLE: 2,000 of the official 60,000
    images, split files cut to match")."""
    return re.sub(r"\s*\([^)]*\)", "", sentence.split(";", 1)[0]).strip()


def origin_source(sentence: str) -> str:
    """A data_origin sentence's second part, where the data came from (the whole sentence if it has no `;`)."""
    return sentence.split(";", 1)[-1].strip()
