"""staged_folder: the staged folder replaces its destination only when the block succeeds."""

from pathlib import Path

import pytest

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
