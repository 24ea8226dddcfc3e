"""A dataset's source record changes when a local source folder's files do, so DVC re-runs its download stage."""

import os
from pathlib import Path

from parabench.data.source import DataSource, folder_fingerprint


def test_the_fingerprint_follows_the_files(tmp_path: Path):
    (tmp_path / "train" / "a").mkdir(parents=True)
    photo = tmp_path / "train" / "a" / "1.png"
    photo.write_bytes(b"pixels")
    first = folder_fingerprint(tmp_path)
    assert first == folder_fingerprint(tmp_path), "unchanged files, same record"
    assert (first["files"], first["bytes"]) == (1, 6)
    photo.write_bytes(b"pixelz")
    os.utime(photo, ns=(1, 1))
    assert folder_fingerprint(tmp_path)["digest"] != first["digest"], "same size, other content and time"
    (tmp_path / "train" / "a" / "2.png").write_bytes(b"")
    assert folder_fingerprint(tmp_path)["files"] == 2


def test_a_download_source_records_its_section_only(tmp_path: Path):
    assert DataSource(source="download").record() == {"source": "download"}
    (tmp_path / "x").write_bytes(b"1")
    record = DataSource(source=str(tmp_path)).record()
    assert record["source"] == str(tmp_path) and record["files"] == 1 and len(record["digest"]) == 16
