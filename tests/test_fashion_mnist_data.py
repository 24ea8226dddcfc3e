"""The IDX reader and the Fashion-MNIST download (local folder, mirror) and prepare steps, on small fixtures."""

import gzip
import hashlib
import json
import socket
import struct
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from parabench.data.fashion_mnist import CLASS_NAMES, FASHION_MNIST, FILES, MAX_IDX_BYTES
from parabench.data.fetch import RemoteFile, mirror_root
from parabench.data.idx import read_idx, write_idx
from parabench.data.provenance import ORIGIN_FILE, read_origin
from parabench.data.registry import origin_sentence
from parabench.data.source import DataSource
from parabench.errors import DataError, DownloadError

MIRROR_FOLDER = FASHION_MNIST.mirror_folder
prepare, load_prepared = FASHION_MNIST.prepare, FASHION_MNIST.load_prepared


def download(dest_dir: Path, source: str, *, files: dict[str, RemoteFile] = FILES) -> None:
    """Fashion-MNIST's download from `source` (a folder, or "download" for the files given)."""
    section = DataSource.model_construct(source=source)  # unvalidated: a folder that vanished since params.yaml
    replace(FASHION_MNIST, files=files).download(dest_dir, section)


def _sentence(out_dir: Path) -> str:
    """The data_origin sentence of what prepare wrote in out_dir."""
    return origin_sentence(load_prepared(out_dir).provenance)


@pytest.fixture
def arrays() -> dict[str, np.ndarray]:
    """Seeded random stand-ins for the four Fashion-MNIST arrays: 50 training and 20 test examples."""
    rng = np.random.default_rng(1)
    return {
        "train_images": rng.integers(0, 256, size=(50, 28, 28), dtype=np.uint8),
        "train_labels": rng.integers(0, 10, size=50, dtype=np.uint8),
        "test_images": rng.integers(0, 256, size=(20, 28, 28), dtype=np.uint8),
        "test_labels": rng.integers(0, 10, size=20, dtype=np.uint8),
    }


def _write_folder(folder: Path, arrays: dict[str, np.ndarray], *, gzipped: bool = True) -> dict[str, Path]:
    """Write the arrays under their Fashion-MNIST file names (with or without .gz)."""
    paths = {}
    for role, array in arrays.items():
        name = FILES[role].name if gzipped else FILES[role].name.removesuffix(".gz")
        paths[role] = folder / name
        write_idx(paths[role], array)
    return paths


@pytest.fixture
def source_folder(tmp_path: Path, arrays: dict[str, np.ndarray]) -> Path:
    folder = tmp_path / "byo"
    _write_folder(folder, arrays)
    return folder


# --- idx ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a-idx3-ubyte", "a-idx3-ubyte.gz"])
def test_idx_round_trip(tmp_path: Path, arrays: dict[str, np.ndarray], name: str) -> None:
    write_idx(tmp_path / name, arrays["train_images"])
    np.testing.assert_array_equal(read_idx(tmp_path / name, MAX_IDX_BYTES), arrays["train_images"])


def test_write_idx_gzip_is_reproducible(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    write_idx(tmp_path / "a.gz", arrays["test_labels"])
    write_idx(tmp_path / "b.gz", arrays["test_labels"])
    assert (tmp_path / "a.gz").read_bytes() == (tmp_path / "b.gz").read_bytes()


def _plain_idx(tmp_path: Path, arrays: dict[str, np.ndarray]) -> Path:
    path = tmp_path / "labels-idx1-ubyte"
    write_idx(path, arrays["train_labels"])
    return path


def test_idx_truncated_file_is_named(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    path = _plain_idx(tmp_path, arrays)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(DataError, match="truncated") as raised:
        read_idx(path, MAX_IDX_BYTES)
    assert str(path) in str(raised.value)


def test_idx_trailing_bytes_are_named(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    path = _plain_idx(tmp_path, arrays)
    path.write_bytes(path.read_bytes() + b"\0\0")
    with pytest.raises(DataError, match="trailing bytes") as raised:
        read_idx(path, MAX_IDX_BYTES)
    assert str(path) in str(raised.value)


def test_idx_that_decompresses_without_bound_is_refused_unread(tmp_path: Path) -> None:
    """A header declaring more than the dataset holds stops at once; a small header over endless data stops one
    byte past what it declared. Either way memory stays bounded by the dataset's known size."""
    declared_huge = tmp_path / "huge-idx3-ubyte.gz"
    declared_huge.write_bytes(gzip.compress(bytes([0, 0, 8, 3]) + struct.pack(">3I", 10**6, 28, 28)))
    with pytest.raises(DataError, match=r"declares shape \(1000000, 28, 28\).*refused before decompressing"):
        read_idx(declared_huge, MAX_IDX_BYTES)
    endless = tmp_path / "endless-idx1-ubyte.gz"
    with gzip.open(endless, "wb") as out:
        out.write(bytes([0, 0, 8, 1]) + struct.pack(">I", 10))
        for _ in range(64):
            out.write(bytes(2**20))  # 64 MiB of zeros, about 64 KiB compressed
    with pytest.raises(DataError, match="trailing bytes after the 10 bytes"):
        read_idx(endless, MAX_IDX_BYTES)


@pytest.mark.parametrize(
    ("offset", "value", "expected"),
    [(0, 0x01, "magic number"), (2, 0x0D, "0x0d"), (3, 0, "0 dimensions"), (3, 5, "5 dimensions")],
)
def test_idx_bad_header_is_named(
    tmp_path: Path, arrays: dict[str, np.ndarray], offset: int, value: int, expected: str
) -> None:
    path = _plain_idx(tmp_path, arrays)
    data = bytearray(path.read_bytes())
    data[offset] = value
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=expected) as raised:
        read_idx(path, MAX_IDX_BYTES)
    assert str(path) in str(raised.value)


@pytest.mark.parametrize("corrupt", [lambda data: data[: len(data) // 2], lambda data: b"not gzip at all"])
def test_idx_corrupt_gzip_is_named(tmp_path: Path, arrays: dict[str, np.ndarray], corrupt) -> None:
    path = tmp_path / "labels-idx1-ubyte.gz"
    write_idx(path, arrays["train_images"])
    path.write_bytes(corrupt(path.read_bytes()))
    with pytest.raises(DataError, match="gzip") as raised:
        read_idx(path, MAX_IDX_BYTES)
    assert str(path) in str(raised.value)


# --- download ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("gzipped", [True, False])
def test_download_from_a_local_folder_copies_the_files(
    tmp_path: Path, arrays: dict[str, np.ndarray], gzipped: bool
) -> None:
    sources = _write_folder(tmp_path / "byo", arrays, gzipped=gzipped)
    dest_dir = tmp_path / "raw"
    download(dest_dir, str(tmp_path / "byo"))
    for path in sources.values():
        assert (dest_dir / path.name).read_bytes() == path.read_bytes()
    expected_names = [ORIGIN_FILE, *(path.name for path in sources.values())]
    assert sorted(p.name for p in dest_dir.iterdir()) == sorted(expected_names)


def test_download_from_a_missing_folder_names_it(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist") as raised:
        download(tmp_path / "raw", str(tmp_path / "nowhere"))
    assert str(tmp_path / "nowhere") in str(raised.value)


def test_download_lists_every_missing_file(source_folder: Path, tmp_path: Path) -> None:
    (source_folder / FILES["train_labels"].name).unlink()
    (source_folder / FILES["test_images"].name).unlink()
    with pytest.raises(DataError) as raised:
        download(tmp_path / "raw", str(source_folder))
    message = str(raised.value)
    assert f"{source_folder} has 2 problem(s)" in message
    for role in ("train_labels", "test_images"):
        assert f"{source_folder / FILES[role].name} is missing" in message
    assert f"{source_folder / FILES['train_images'].name} is missing" not in message
    for remote in FILES.values():
        assert remote.name in message.split("It must hold")[1], "the message says which files the folder needs"
    assert not (tmp_path / "raw").exists()


def test_download_names_every_bad_file(source_folder: Path, tmp_path: Path) -> None:
    truncated = source_folder / FILES["train_images"].name
    truncated.write_bytes(gzip.compress(gzip.decompress(truncated.read_bytes())[:-10]))
    not_gzip = source_folder / FILES["test_labels"].name
    not_gzip.write_bytes(b"garbage")
    with pytest.raises(DataError) as raised:
        download(tmp_path / "raw", str(source_folder))
    assert str(truncated) in str(raised.value) and str(not_gzip) in str(raised.value)
    assert not (tmp_path / "raw").exists()


def test_download_mode_uses_the_mirror_from_the_environment(
    tmp_path: Path, arrays: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror_paths = _write_folder(tmp_path / "mirror" / MIRROR_FOLDER, arrays)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    files = {
        role: RemoteFile(
            name=path.name,
            urls=(f"http://127.0.0.1:{closed_port}/{path.name}",),
            sha256=hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest(),
        )
        for role, path in mirror_paths.items()
    }
    monkeypatch.setenv("PARABENCH_DATA_MIRROR", str(tmp_path / "mirror"))
    download(tmp_path / "raw", "download", files=files)
    fetched = [tmp_path / "raw" / remote.name for remote in files.values()]
    assert [path.read_bytes() for path in fetched] == [path.read_bytes() for path in mirror_paths.values()]


def test_real_file_table_matches_the_dataset() -> None:
    assert [remote.name for remote in FILES.values()] == [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ]
    for remote in FILES.values():
        assert remote.urls[0].startswith("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/")
        assert all(url.endswith("/" + remote.name) for url in remote.urls)
        assert len(remote.sha256) == 64


# --- mirror_root -------------------------------------------------------------------------------------


def test_mirror_root_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PARABENCH_DATA_MIRROR", raising=False)
    assert mirror_root() is None
    monkeypatch.setenv("PARABENCH_DATA_MIRROR", "")
    assert mirror_root() is None
    (tmp_path / "abs").mkdir()
    monkeypatch.setenv("PARABENCH_DATA_MIRROR", str(tmp_path / "abs"))
    assert mirror_root() == tmp_path / "abs"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel" / "data").mkdir(parents=True)
    monkeypatch.setenv("PARABENCH_DATA_MIRROR", "rel/data")
    assert mirror_root() == tmp_path / "rel" / "data"


def test_a_mirror_variable_naming_no_folder_stops_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PARABENCH_DATA_MIRROR", str(tmp_path / "typo"))
    with pytest.raises(DownloadError, match=rf"PARABENCH_DATA_MIRROR={tmp_path / 'typo'} does not exist"):
        mirror_root()


# --- prepare -----------------------------------------------------------------------------------------


def test_prepare_writes_the_input_arrays(source_folder: Path, tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    prepare(source_folder, tmp_path / "prepared")
    loaded = load_prepared(tmp_path / "prepared")
    for split in ("train", "test"):
        images, labels = loaded.splits[split].images, loaded.splits[split].labels
        assert images.dtype == np.uint8 and images.shape[1] == 1, "grey images get one channel"
        np.testing.assert_array_equal(images[:, 0], arrays[f"{split}_images"])
        assert labels.dtype == np.int64
        np.testing.assert_array_equal(labels, arrays[f"{split}_labels"])
    meta = json.loads((tmp_path / "prepared" / "meta.json").read_text())
    assert meta["counts"] == {"train": 50, "test": 20}
    assert meta["classes"] == {"train": list(CLASS_NAMES), "test": list(CLASS_NAMES)}
    assert meta["image_shape"] == [1, 28, 28]


def test_prepare_accepts_plain_idx_names(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    _write_folder(tmp_path / "raw", arrays, gzipped=False)
    prepare(tmp_path / "raw", tmp_path / "prepared")
    np.testing.assert_array_equal(load_prepared(tmp_path / "prepared").splits["test"].labels, arrays["test_labels"])


def test_prepare_twice_is_byte_identical(source_folder: Path, tmp_path: Path) -> None:
    prepare(source_folder, tmp_path / "first")
    prepare(source_folder, tmp_path / "second")
    first = {path.name: path.read_bytes() for path in (tmp_path / "first").iterdir()}
    second = {path.name: path.read_bytes() for path in (tmp_path / "second").iterdir()}
    assert sorted(first) == ["meta.json", "test_images.npy", "test_labels.npy", "train_images.npy", "train_labels.npy"]
    assert first == second


def test_prepare_count_mismatch_names_both_files(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    arrays["train_labels"] = arrays["train_labels"][:49]
    paths = _write_folder(tmp_path / "raw", arrays)
    with pytest.raises(DataError) as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    message = str(raised.value)
    for expected in (str(paths["train_labels"]), str(paths["train_images"]), "49", "50"):
        assert expected in message
    assert not (tmp_path / "prepared").exists()


def test_prepare_rejects_labels_outside_the_classes(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    arrays["test_labels"][3] = 10
    paths = _write_folder(tmp_path / "raw", arrays)
    with pytest.raises(DataError, match=r"outside 0\.\.9: \[10\]") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    assert str(paths["test_labels"]) in str(raised.value)


def test_prepare_rejects_images_of_the_wrong_shape(tmp_path: Path, arrays: dict[str, np.ndarray]) -> None:
    arrays["train_images"] = arrays["train_images"].reshape(50, 784)
    paths = _write_folder(tmp_path / "raw", arrays)
    with pytest.raises(DataError, match="expected \\(N, 28, 28\\)") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    assert str(paths["train_images"]) in str(raised.value)


def test_prepare_without_raw_files_says_so(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    with pytest.raises(DataError, match="dvc repro download@fashion_mnist"):
        prepare(tmp_path / "raw", tmp_path / "prepared")


def test_load_prepared_without_outputs_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="dvc repro prepare@fashion_mnist"):
        load_prepared(tmp_path / "missing")


# --- origin ------------------------------------------------------------------------------------------


def test_local_download_records_a_local_origin_and_prepare_says_sample(source_folder: Path, tmp_path: Path) -> None:
    download(tmp_path / "raw", str(source_folder))
    origin = read_origin(tmp_path / "raw")
    assert origin is not None
    assert (origin.kind, origin.source, origin.verified) == ("local", str(source_folder), False)
    prepare(tmp_path / "raw", tmp_path / "prepared")
    sentence = _sentence(tmp_path / "prepared")
    assert sentence.startswith("Fashion-MNIST SAMPLE: 70 of the official 70,000 images (50 train, 20 test)")
    assert f"from the local folder {source_folder} (not checksum-verified)" in sentence


def test_download_from_the_mirror_records_an_official_verified_origin(
    tmp_path: Path, arrays: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror_paths = _write_folder(tmp_path / "mirror" / MIRROR_FOLDER, arrays)
    files = {
        role: RemoteFile(name=path.name, urls=(), sha256=hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest())
        for role, path in mirror_paths.items()
    }
    monkeypatch.setenv("PARABENCH_DATA_MIRROR", str(tmp_path / "mirror"))
    download(tmp_path / "raw", "download", files=files)
    origin = read_origin(tmp_path / "raw")
    assert origin is not None
    assert (origin.kind, origin.source, origin.verified) == ("official", str(tmp_path / "mirror" / MIRROR_FOLDER), True)
    prepare(tmp_path / "raw", tmp_path / "prepared")
    sentence = _sentence(tmp_path / "prepared")
    assert f"official files from {tmp_path / 'mirror' / MIRROR_FOLDER}, sha256-verified" in sentence


def test_data_origin_leaves_the_arrays_unchanged(source_folder: Path, tmp_path: Path) -> None:
    prepare(source_folder, tmp_path / "without-origin")
    download(tmp_path / "raw", str(source_folder))
    prepare(tmp_path / "raw", tmp_path / "with-origin")
    for name in ("train_images.npy", "train_labels.npy", "test_images.npy", "test_labels.npy"):
        assert (tmp_path / "without-origin" / name).read_bytes() == (tmp_path / "with-origin" / name).read_bytes()
    sentence = _sentence(tmp_path / "without-origin")
    assert "of unrecorded origin" in sentence and "re-run the download stage" in sentence


def test_a_failed_download_leaves_no_stale_origin(source_folder: Path, tmp_path: Path) -> None:
    download(tmp_path / "raw", str(source_folder))
    (source_folder / FILES["test_labels"].name).write_bytes(b"garbage")
    with pytest.raises(DataError):
        download(tmp_path / "raw", str(source_folder))
    assert read_origin(tmp_path / "raw") is None
