"""Files and folders: atomic writes (a crash never leaves a half-written output for DVC to cache), reads, digests."""

import errno
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from parabench.errors import DataError, DiskFull

Record = TypeVar("Record", bound=BaseModel)

NO_SPACE = (errno.ENOSPC, errno.EDQUOT)  # the device is full, or the user's quota on it


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with full_disk_named(path, discard=lambda: tmp_path.unlink(missing_ok=True)):
            tmp_path.touch(mode=0o600, exist_ok=False)
            yield tmp_path
            os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


@contextmanager
def full_disk_named(path: Path, discard: Callable[[], None]) -> Iterator[None]:
    """Within it, the device filling up (ENOSPC, EDQUOT) while `path` is written is DiskFull naming it: what was
    half-written is `discard`ed first, so that the free space it reports is what a rerun will find."""
    try:
        yield
    except OSError as err:
        if err.errno not in NO_SPACE:
            raise
        discard()
        raise no_space(path, needed=None) from None


def no_space(path: Path, needed: int | None) -> DiskFull:
    """The error for a file that did not fit: its folder, what it needed (when known), what is free there, and that
    an earlier copy is kept (writes are atomic: the earlier file stays until the new one is whole)."""
    folder = path.parent
    free = shutil.disk_usage(folder).free
    size = f"needs {needed:,} bytes" if needed is not None else "did not fit"
    kept = f"the earlier {path.name} is kept as it was" if path.exists() else f"no {path.name} was written"
    return DiskFull(
        f"no space left on the device: {path} {size}, and {folder} has {free:,} bytes free; {kept}. Free space "
        "there (or give the folder a larger device) and run again."
    )


@contextmanager
def staged_folder(dest_dir: Path) -> Iterator[Path]:
    """Yield a new empty folder beside dest_dir; it replaces dest_dir if the block succeeds, else it is deleted (a
    full disk on the way: DiskFull, the earlier dest_dir kept)."""
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = dest_dir.parent / f".{dest_dir.name}.{secrets.token_hex(4)}.tmp"
    staging.mkdir()
    try:
        with full_disk_named(dest_dir, discard=lambda: shutil.rmtree(staging, ignore_errors=True)):
            yield staging
            _replace_folder(dest_dir, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _replace_folder(dest_dir: Path, new_dir: Path) -> None:
    """Put new_dir at dest_dir; an existing dest_dir is moved aside first and deleted once the new one is there."""
    if not dest_dir.exists() and not dest_dir.is_symlink():
        os.replace(new_dir, dest_dir)
        return
    old = dest_dir.parent / f".{dest_dir.name}.{secrets.token_hex(4)}.old"
    os.replace(dest_dir, old)
    os.replace(new_dir, dest_dir)
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old)
    else:
        old.unlink()


def write_atomic(path: str | Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp)` and move the result onto `path`."""
    with atomic_path(path) as tmp:
        write(tmp)


def write_bytes(path: str | Path, data: bytes | memoryview) -> None:
    """Write `data` atomically, first making sure the folder has room for it (DiskFull, naming the bytes, if not)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if shutil.disk_usage(path.parent).free < len(data):
        raise no_space(path, needed=len(data))
    write_atomic(path, lambda tmp: tmp.write_bytes(data))


def write_json(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON, atomically."""
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n"))


def read_json(path: str | Path) -> Any:
    """Read a JSON file; one missing, cut or garbled (a stage's output changed behind DVC's back) is a DataError
    naming it."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise DataError(f"{path}: missing; `dvc repro` makes it again (its stage runs once more).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not readable as JSON ({err}); {changed_behind_dvc(path)}") from None


def read_model(path: str | Path, model: type[Record]) -> Record:
    """A record a stage wrote (JSON of a pydantic model), checked against its model; one that is not is named."""
    try:
        return model.model_validate(read_json(path))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "its top level"
        raise DataError(
            f"{path}: not what its stage writes ({where}: {first['msg']}); {changed_behind_dvc(path)}"
        ) from None


def changed_behind_dvc(path: str | Path) -> str:
    """What to do about a stage's output that was cut or changed since its stage wrote it."""
    return (
        f"it was cut or changed since its stage wrote it. `dvc checkout {path}` restores DVC's copy; `dvc repro` "
        "makes it again."
    )


def tree_digest(path: Path) -> str:
    """A digest of a file's bytes, or of every file's relative path and bytes under a folder ('missing' if absent)."""
    if not path.exists():
        return "missing"
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for file in files:
        if file != path:
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as stream:
            while chunk := stream.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:16]
