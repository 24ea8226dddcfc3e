"""The download stage: fill the raw folder from a local folder, the mirror's stand-in folder, or d2l's hotdog.zip."""

from pathlib import Path

from parabench.data.class_folders import SPLITS
from parabench.data.fetch import MIRROR_ENV, mirror_root
from parabench.data.hotdog import sources
from parabench.data.hotdog.folder_copy import copy_class_folder
from parabench.data.hotdog.official_fetch import fetch_official
from parabench.data.hotdog.sources import MIRROR_FOLDER
from parabench.data.source import DataSource

LOCAL_DETAIL = "a bring-your-own folder copied without checksum verification, not d2l's hotdog.zip"
LOCAL_FIX = "complete the folder, or set params.yaml data.hotdog.source to another such folder or to download."
STAND_IN_DETAIL = (
    "the mirror's stand-in folder in d2l's layout, not d2l's hotdog.zip, copied without checksum verification"
)
STAND_IN_FIX = (
    f"repair the mirror's {MIRROR_FOLDER}/ folder, put d2l's hotdog.zip in it, or point params.yaml "
    f"data.hotdog.source to another folder (or unset {MIRROR_ENV} to download d2l's hotdog.zip)."
)


def download(dest_dir: Path, section: DataSource) -> None:
    """Fill dest_dir with train/<class>/ and test/<class>/ image folders and record their origin in origin.json.

    source a folder: copied after checking its layout. source "download": d2l's hotdog.zip, sha1-verified, from
    $PARABENCH_DATA_MIRROR/hotdog/ or its URLs; but when that mirror folder holds no hotdog.zip and does hold
    train/ and test/ (a stand-in in d2l's layout), the folder is copied instead, recorded as not d2l's file.
    """
    if section.source != "download":
        copy_class_folder(Path(section.source), dest_dir, detail=LOCAL_DETAIL, to_fix=LOCAL_FIX)
        return
    root = mirror_root()
    mirror_dir = root / MIRROR_FOLDER if root is not None else None
    if mirror_dir is not None and _holds_a_stand_in(mirror_dir):
        copy_class_folder(mirror_dir, dest_dir, detail=STAND_IN_DETAIL, to_fix=STAND_IN_FIX)
    else:
        fetch_official(dest_dir, mirror_dir)


def _holds_a_stand_in(mirror_dir: Path) -> bool:
    """Whether the mirror folder lacks hotdog.zip but holds train/ and test/ folders."""
    has_splits = all((mirror_dir / split).is_dir() for split in SPLITS)
    return has_splits and not (mirror_dir / sources.HOTDOG_ZIP.name).is_file()
