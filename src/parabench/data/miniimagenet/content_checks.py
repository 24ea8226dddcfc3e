"""Checks that a first, unpinned copy of images.zip or a pickle is that kind of file and not a web page."""

import zipfile
from pathlib import Path


def zip_problem(path: Path) -> str | None:
    """Why a first copy of images.zip is not a zip archive, or None."""
    if zipfile.is_zipfile(path):
        return None
    return "is not a zip archive (Google Drive sends a web page instead when the file's download quota is exceeded)"


def pickle_problem(path: Path) -> str | None:
    """Why a first copy of a pickle is not one (no protocol 2 to 5 header), or None."""
    with path.open("rb") as stream:
        header = stream.read(2)
    if len(header) == 2 and header[0] == 0x80 and 2 <= header[1] <= 5:
        return None
    return "is not a pickle (it lacks a protocol 2 to 5 header; a web page in its place?)"
