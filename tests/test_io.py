"""Atomic writes and reads: a staged folder replaces its destination only when the block succeeds; a file that does
not fit the disk is DiskFull, naming the folder, the bytes and the space free, the earlier file kept; an output cut,
garbled or missing is a DataError naming it, with how to restore it."""

import errno
import shutil
from pathlib import Path

import pytest
import torch
from pydantic import BaseModel

from parabench import io
from parabench.engine.checkpoint import read_tensors, write_tensors
from parabench.errors import DataError, DiskFull
from parabench.io import staged_folder


def test_a_failing_staged_folder_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), staged_folder(tmp_path / "out") as staging:
        (staging / "half.txt").write_bytes(b"half")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_a_succeeding_staged_folder_replaces_the_destination(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stale.txt").write_bytes(b"old")
    with staged_folder(tmp_path / "out") as staging:
        (staging / "new.txt").write_bytes(b"new")
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["new.txt"]


def test_a_file_that_cannot_fit_is_refused_before_a_byte_is_written(tmp_path: Path, monkeypatch) -> None:
    earlier = tmp_path / "out" / "model.pt"
    earlier.parent.mkdir()
    earlier.write_bytes(b"earlier")
    monkeypatch.setattr(io.shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(10_000, 9_000, 1_000))
    with pytest.raises(DiskFull) as refused:
        io.write_bytes(earlier, b"x" * 5_000)
    message = str(refused.value)
    assert "no space left" in message and "5,000 bytes" in message and "1,000 bytes free" in message
    assert str(earlier.parent) in message and "kept" in message
    assert earlier.read_bytes() == b"earlier" and sorted(p.name for p in earlier.parent.iterdir()) == ["model.pt"]


def test_a_disk_that_fills_during_the_write_leaves_the_earlier_file_and_no_temporary(tmp_path: Path, monkeypatch):
    earlier = tmp_path / "results.json"
    earlier.write_text("{}")

    def fill_up(tmp: Path, data: bytes) -> None:
        with tmp.open("wb") as stream:
            stream.write(data[:3])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", fill_up)
    with pytest.raises(DiskFull, match="no space left on the device") as refused:
        io.write_bytes(earlier, b"0123456789")
    assert "did not fit" in str(refused.value) and str(tmp_path) in str(refused.value)
    assert earlier.read_text() == "{}" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_other_write_errors_pass_through_unchanged(tmp_path: Path) -> None:
    with pytest.raises(PermissionError):
        io.write_atomic(tmp_path / "x.txt", lambda tmp: (_ for _ in ()).throw(PermissionError("read-only")))
    assert list(tmp_path.iterdir()) == []


def test_a_stage_output_cut_or_garbled_behind_dvcs_back_is_named_with_how_to_restore_it(tmp_path: Path) -> None:
    record = tmp_path / "results" / "train.json"
    io.write_json(record, {"workload": "x", "epochs": 2})
    record.write_text(record.read_text()[:10])
    with pytest.raises(DataError, match=r"train\.json: not readable as JSON") as cut:
        io.read_json(record)
    assert f"dvc checkout {record}" in str(cut.value) and "dvc repro" in str(cut.value)
    record.unlink()
    with pytest.raises(DataError, match=r"train\.json: missing; `dvc repro` makes it again"):
        io.read_json(record)


def test_a_record_of_another_shape_names_the_key_that_differs(tmp_path: Path) -> None:
    class Record(BaseModel):
        workload: str
        epochs: int

    path = tmp_path / "record.json"
    io.write_json(path, {"workload": "x", "epochs": 2})
    assert io.read_model(path, Record) == Record(workload="x", epochs=2)
    io.write_json(path, {"workload": "x"})
    with pytest.raises(DataError, match=r"record\.json: not what its stage writes \(epochs: Field required\)"):
        io.read_model(path, Record)


def test_a_model_file_cut_short_is_named_not_a_zip_error(tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    write_tensors(path, {"weight": torch.ones(1000)})
    assert torch.equal(read_tensors(path)["weight"], torch.ones(1000))
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(DataError, match=r"model\.pt: does not load \(.*\); it was cut or changed") as cut:
        read_tensors(path)
    assert "dvc checkout" in str(cut.value) and "\n" not in str(cut.value)


def test_a_folder_that_fills_the_disk_while_staged_is_named_and_the_earlier_one_kept(tmp_path: Path) -> None:
    dest = tmp_path / "prepared"
    dest.mkdir()
    (dest / "meta.json").write_text("{}")
    full_disk = pytest.raises(DiskFull, match=r"no space left on the device: .*prepared did not fit")
    with full_disk as full, staged_folder(dest) as staging:
        (staging / "train_images.npy").write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert "the earlier prepared is kept as it was" in str(full.value)
    assert [p.name for p in tmp_path.iterdir()] == ["prepared"] and (dest / "meta.json").read_text() == "{}"
