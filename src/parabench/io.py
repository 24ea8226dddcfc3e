"""Files and folders: atomic writes (a crash never leaves a half-written output for DVC to cache), reads, digests."""

import hashlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


@contextmanager
def staged_folder(dest_dir: Path) -> Iterator[Path]:
    """Yield a new empty folder beside dest_dir; it replaces dest_dir if the block succeeds, else it is deleted."""
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = dest_dir.parent / f".{dest_dir.name}.{secrets.token_hex(4)}.tmp"
    staging.mkdir()
    try:
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


def write_json(path: str | Path, data: Any) -> None:
    """Write `data` as indented JSON, atomically."""
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n"))


def read_json(path: str | Path) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text())


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
