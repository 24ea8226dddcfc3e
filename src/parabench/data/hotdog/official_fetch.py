"""Fetch d2l's hotdog.zip (mirror first, sha1-verified), unpack its train/ and test/ as the raw folder, record it."""

import shutil
from pathlib import Path

from parabench.data.archive import extract_zip
from parabench.data.fetch import MIRROR_ENV, fetch
from parabench.data.hotdog import sources
from parabench.data.hotdog.sources import DATASET, MIRROR_FOLDER
from parabench.data.origin import forget_origin, record_origin
from parabench.errors import DataError


def fetch_official(dest_dir: Path, mirror_dir: Path | None) -> None:
    """Fetch hotdog.zip into dest_dir (the mirror's copy first, then each URL), then unpack it as dest_dir.

    The unpacking replaces dest_dir with the archive's train/ and test/ at once (the zip goes with the old
    folder); on failure the zip is deleted and a dest_dir this call created is removed, and origin.json is
    forgotten first, so no half-filled folder or stale record is left.
    """
    forget_origin(dest_dir)
    created = not dest_dir.exists()
    archive = dest_dir / sources.HOTDOG_ZIP.name
    try:
        fetched = fetch(sources.HOTDOG_ZIP, dest_dir, mirror_dir, hint=_hint())
        extract_zip(archive, dest_dir, strip_top_folder=True)
    except DataError:
        archive.unlink(missing_ok=True)
        if created:
            shutil.rmtree(dest_dir, ignore_errors=True)
        raise
    record_origin(
        dest_dir,
        dataset=DATASET,
        kind="official",
        source=fetched.source,
        verified=True,
        detail=f"d2l's {archive.name}, checked against the sha1 d2l publishes, unpacked into train/ and test/",
    )


def _hint() -> str:
    """What to do when no source delivered a verified hotdog.zip."""
    remote = sources.HOTDOG_ZIP
    return (
        f"To fix: set {MIRROR_ENV} to a folder holding {MIRROR_FOLDER}/{remote.name} (d2l's file, sha1 {remote.sha1}), "
        "or point params.yaml data.hotdog.source to a folder with train/<class>/ and test/<class>/ image folders."
    )
