"""The download stage: fill the raw folder from a local folder, the mirror's sample, or the published files."""

from pathlib import Path

from parabench.data.fetch import mirror_root
from parabench.data.miniimagenet.folder_copy import copy_folder
from parabench.data.miniimagenet.layout import detect_layout, layout_problems
from parabench.data.miniimagenet.official_fetch import fetch_official, official_files
from parabench.data.miniimagenet.sources import MIRROR_FOLDER, Layout, MiniImagenetSource


def download(dest_dir: Path, source: MiniImagenetSource) -> None:
    """Fill dest_dir with miniImageNet in one layout and record where it came from in origin.json.

    source "download": the mirror's official files of the chosen layout, else the mirror's sample folder
    (images/ and the three CSVs), else the official URLs. A folder: copied after checking its layout.
    """
    if source.source != "download":
        folder = Path(source.source)
        copy_folder(folder, dest_dir, detect_layout(folder, source.layout), kind="local")
        return
    root = mirror_root()
    mirror_dir = root / MIRROR_FOLDER if root is not None else None
    if mirror_dir is not None and _holds_only_a_sample(mirror_dir, source.layout):
        copy_folder(mirror_dir, dest_dir, "images", kind="sample")
    else:
        fetch_official(dest_dir, source.layout, mirror_dir)


def _holds_only_a_sample(mirror_dir: Path, layout: Layout) -> bool:
    """Whether the mirror folder lacks the layout's published files but holds images/ and the three CSVs."""
    holds_official_files = all((mirror_dir / remote.name).is_file() for remote in official_files(layout))
    return not holds_official_files and not layout_problems(mirror_dir, "images")
