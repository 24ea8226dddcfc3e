"""load_restricted: checksum first, then only numpy arrays and plain data; code-running pickles are refused."""

import builtins
import hashlib
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from parabench.data.safe_pickle import file_sha256, load_restricted
from parabench.errors import DataError


def _write(path: Path, payload: object, protocol: int = pickle.DEFAULT_PROTOCOL) -> str:
    """Pickle the payload to path and return the file's sha256."""
    path.write_bytes(pickle.dumps(payload, protocol=protocol))
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _RunsACommand:
    """Unpickling this calls os.system, which writes the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


class _CallsEval:
    """Unpickling this calls builtins.eval."""

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return builtins.eval, ("1 + 1",)


def _learn2learn_cache() -> dict[str, object]:
    rng = np.random.default_rng(0)
    return {
        "image_data": rng.integers(0, 256, size=(6, 84, 84, 3), dtype=np.uint8),
        "class_dict": {"n01532829": [0, 1, 2], "n01558993": [3, 4, 5]},
    }


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_a_learn2learn_cache_dict_loads(tmp_path: Path, protocol: int) -> None:
    cache = _learn2learn_cache()
    path = tmp_path / "mini-imagenet-cache-train.pkl"
    loaded = load_restricted(path, _write(path, cache, protocol))
    assert loaded["class_dict"] == cache["class_dict"]
    np.testing.assert_array_equal(loaded["image_data"], cache["image_data"])
    assert loaded["image_data"].dtype == np.uint8


def test_plain_data_and_numpy_scalars_load(tmp_path: Path) -> None:
    payload = {"set": {1, 2}, "bytes": b"\x00\xff", "empty": b"", "scalar": np.int64(7), "nested": [(1.5, "a")]}
    path = tmp_path / "plain.pkl"
    assert load_restricted(path, _write(path, payload, protocol=2)) == payload


def test_a_pickle_that_runs_a_command_is_refused_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pkl"
    sha = _write(path, {"image_data": _RunsACommand(marker)})
    with pytest.raises(DataError) as raised:
        load_restricted(path, sha)
    message = str(raised.value)
    assert str(path) in message and f"{os.system.__module__}.system" in message
    assert not marker.exists()


def test_a_pickle_referencing_eval_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "eval.pkl"
    with pytest.raises(DataError, match=r"builtins\.eval") as raised:
        load_restricted(path, _write(path, [_CallsEval()]))
    assert str(path) in str(raised.value)


def test_a_checksum_mismatch_is_refused_before_unpickling(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pkl"
    actual = _write(path, _RunsACommand(marker))
    wrong = "0" * 64
    with pytest.raises(DataError) as raised:
        load_restricted(path, wrong)
    message = str(raised.value)
    assert str(path) in message and wrong in message and actual in message
    assert "global" not in message  # refused on the checksum, before any global was looked at
    assert not marker.exists()


def test_a_truncated_pickle_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.pkl"
    _write(path, _learn2learn_cache())
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataError, match="not a valid pickle") as raised:
        load_restricted(path, file_sha256(path))
    assert str(path) in str(raised.value)
