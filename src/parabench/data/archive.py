"""Safe zip extraction: refuse members that could land outside the destination; extract all of it or nothing."""

import re
import shutil
import stat
import zipfile
import zlib
from pathlib import Path

from parabench.errors import DataError
from parabench.io import staged_folder

CHUNK_BYTES = 1 << 20
MAC_METADATA = "__MACOSX"  # macOS's zip adds resource forks under this top folder: never data, never extracted
DRIVE_LETTER = re.compile(r"^[A-Za-z]:")
PATH_SEPARATORS = re.compile(r"[\\/]")


def extract_zip(archive: Path, dest_dir: Path, *, strip_top_folder: bool = False) -> None:
    """Extract every member of `archive` into dest_dir, replacing it, after checking that every member is safe.

    Refused, all reported in one DataError before anything is written: absolute paths, drive letters, '..'
    components, symbolic links and encrypted members. strip_top_folder: when every member lies under one top
    folder (images.zip holds images/..., d2l's hotdog.zip holds hotdog/...), extract that folder's contents.
    macOS metadata (members under __MACOSX/) is left out.
    """
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = [member for member in bundle.infolist() if member.filename.split("/", 1)[0] != MAC_METADATA]
            unsafe = [f"{member.filename!r} {reason}" for member in members if (reason := _unsafe_reason(member))]
            if unsafe:
                raise DataError(_unsafe_message(archive, unsafe))
            prefix = _top_folder(members) if strip_top_folder else ""
            with staged_folder(dest_dir) as staging:
                for member in members:
                    _extract_member(bundle, member, _target(staging, member.filename.removeprefix(prefix)))
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
        raise DataError(
            f"{archive} is not a valid zip archive ({error}); nothing was extracted. "
            "Delete it and download it again, or extract it yourself and point the data source to the folder."
        ) from error


def unpack_zip(archive: Path, dest_dir: Path, *, strip_top_folder: bool = False) -> None:
    """Extract the archive as dest_dir (see extract_zip), then delete it, also when it is refused: the raw folder
    keeps the extracted files, never the archive."""
    try:
        extract_zip(archive, dest_dir, strip_top_folder=strip_top_folder)
    finally:
        archive.unlink(missing_ok=True)


def zip_problem(path: Path) -> str | None:
    """Why a first, unpinned download is not a zip archive, or None (a content check for fetch)."""
    if zipfile.is_zipfile(path):
        return None
    return "is not a zip archive (Google Drive sends a web page instead when the file's download quota is exceeded)"


def _unsafe_reason(member: zipfile.ZipInfo) -> str:
    """Why extracting the member is refused, or "" when it is safe."""
    name = member.filename
    if name.startswith(("/", "\\")):
        return "is an absolute path"
    if DRIVE_LETTER.match(name):
        return "starts with a drive letter"
    if ".." in PATH_SEPARATORS.split(name):
        return "has a '..' component"
    if stat.S_ISLNK(member.external_attr >> 16):
        return "is a symbolic link"
    if member.flag_bits & 0x1:
        return "is encrypted"
    return ""


def _unsafe_message(archive: Path, unsafe: list[str]) -> str:
    """One error naming every refused member, the rule, and what to do."""
    listed = "\n".join(f"  - member {line}" for line in unsafe)
    return (
        f"{archive} has {len(unsafe)} unsafe member(s); nothing was extracted:\n{listed}\n"
        "Every member must be a relative path inside the archive, without '..', and a plain (unencrypted) file "
        "or folder, not a symbolic link. Get the archive again from its official source."
    )


def _top_folder(members: list[zipfile.ZipInfo]) -> str:
    """'name/' when every member lies under the folder `name`, else ""."""
    tops = {member.filename.split("/", 1)[0] for member in members}
    if len(tops) != 1:
        return ""
    prefix = f"{tops.pop()}/"
    return prefix if all(member.filename.startswith(prefix) for member in members) else ""


def _target(staging: Path, relative_name: str) -> Path:
    """Where a checked member goes: its non-empty name components under staging (never an absolute path)."""
    return staging.joinpath(*(part for part in relative_name.split("/") if part not in ("", ".")))


def _extract_member(bundle: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path) -> None:
    """Write one checked member at `target` (a folder, or a file whose CRC zipfile verifies as it reads)."""
    if member.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with bundle.open(member) as source, target.open("wb") as out:
        shutil.copyfileobj(source, out, CHUNK_BYTES)
