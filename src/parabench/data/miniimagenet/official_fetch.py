"""Fetch a layout's published files (mirror first), unpack images.zip, and record how far they were verified."""

from pathlib import Path

from parabench.data.archive import extract_zip
from parabench.data.fetch import MIRROR_ENV, SHA256SUMS, RemoteFile, fetch
from parabench.data.miniimagenet import sources
from parabench.data.miniimagenet.sources import DATASET, IMAGES_DIR, MIRROR_FOLDER, Layout
from parabench.data.origin import forget_origin, record_origin


def official_files(layout: Layout) -> list[RemoteFile]:
    """The published files of a layout."""
    if layout == "images":
        return [*sources.SPLIT_CSVS.values(), sources.IMAGES_ZIP]
    return list(sources.PICKLES.values())


def fetch_official(dest_dir: Path, layout: Layout, mirror_dir: Path | None) -> None:
    """Fetch the layout's published files (mirror first), unpack images.zip into images/, record the origin."""
    forget_origin(dest_dir)
    remotes = official_files(layout)
    fetched = [fetch(remote, dest_dir, mirror_dir, hint=_hint(remote)) for remote in remotes]
    if layout == "images":
        archive = dest_dir / sources.IMAGES_ZIP.name
        extract_zip(archive, dest_dir / IMAGES_DIR, strip_top_folder=True)
        archive.unlink()
    pinned = [remote.name for remote in remotes if remote.sha256 is not None]
    unpinned = [remote.name for remote in remotes if remote.sha256 is None]
    notes = [f"{', '.join(pinned)} sha256-verified"] if pinned else []
    if unpinned:
        notes.append(
            f"{', '.join(unpinned)} not pinned (no checksum is published): trusted on first download, "
            f"sha256 recorded in {SHA256SUMS}"
        )
    record_origin(
        dest_dir,
        dataset=DATASET,
        kind="official",
        source=", ".join(dict.fromkeys(file.source for file in fetched)),
        verified=not unpinned,
        detail="; ".join(notes),
    )


def _hint(remote: RemoteFile) -> str:
    """What to do when no source delivered `remote`."""
    return (
        f"To fix: set {MIRROR_ENV} to a folder holding {MIRROR_FOLDER}/{remote.name} (or a sample: "
        f"{MIRROR_FOLDER}/{IMAGES_DIR}/ with train.csv, val.csv, test.csv), or point params.yaml "
        "data.miniimagenet.source to a local folder in either layout (images/ and the three CSVs, or "
        f"learn2learn's {', '.join(remote.name for remote in sources.PICKLES.values())})."
    )
