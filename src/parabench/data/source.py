"""A dataset's params.yaml section: `source` is `download` (official files, mirror first) or a local folder."""

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator


class DataSource(BaseModel):
    """Where a dataset comes from; datasets with more choices extend this section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str

    @field_validator("source")
    @classmethod
    def _download_or_existing_folder(cls, value: str) -> str:
        if value != "download" and not Path(value).is_dir():
            raise ValueError(f"'{value}' is neither 'download' nor an existing folder")
        return value

    def record(self) -> dict[str, Any]:
        """What the download stage reads, in a form that changes when it does: a local folder adds the count,
        bytes and a digest of every file's path, size and modification time (as DVC's own state tracks files)."""
        section = self.model_dump()
        if self.source == "download":
            return section
        return {**section, **folder_fingerprint(Path(self.source))}


def folder_fingerprint(folder: Path) -> dict[str, Any]:
    """Files, bytes and a digest of (relative path, size, mtime) of every file under `folder`."""
    digest, files, total = hashlib.sha256(), 0, 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder).as_posix()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        files, total = files + 1, total + stat.st_size
    return {"files": files, "bytes": total, "digest": digest.hexdigest()[:16]}
