"""miniImageNet: download (local folder, mirror sample, local HTTP server), prepare in both layouts, and every check."""

import csv
import hashlib
import json
import os
import pickle
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pydantic import ValidationError

from parabench.data.fetch import MIRROR_ENV, SHA256SUMS
from parabench.data.miniimagenet import MINIIMAGENET, PICKLES, SPLIT_CSVS, SPLITS, MiniImagenet, MiniImagenetSource
from parabench.data.provenance import Provenance, read_origin
from parabench.data.registry import origin_sentence
from parabench.errors import DataError, DownloadError
from tests.http_server import FileServer, Route

SPLIT_CLASSES = {  # listed out of order: prepare sorts classes by wnid and rows by (class, file name)
    "train": ["n01000003", "n01000001", "n01000002"],
    "val": ["n02000002", "n02000001"],
    "test": ["n03000001", "n03000002"],
}
IMAGE_NUMBERS = (3, 1, 2)
SHARED_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
MIRROR_FOLDER = MINIIMAGENET.mirror_folder
download, prepare, load_prepared = MINIIMAGENET.download, MINIIMAGENET.prepare, MINIIMAGENET.load_prepared
OFFICIAL_SPLIT_MD5 = {
    "train": "9525e1538f67719f18f1936bf8d0782d",
    "val": "ce315ce99b41fbf84fa6acd69315d918",
    "test": "5b89df877c6cbe5d291e43118a2a9591",
}


def _colour(wnid: str, number: int) -> tuple[int, int, int]:
    """A distinct solid colour per image, so the decoded rows can be told apart."""
    return (int(wnid[1:3]) * 70, int(wnid[-1]) * 60, number * 50)


def _write_csv(path: Path, rows: list[tuple[str, str]]) -> None:
    with path.open("w", newline="") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(["filename", "label"])
        writer.writerows(rows)


def _write_image_folder(folder: Path) -> None:
    """images/ with 3 JPEGs per class (one of them not 84x84) and the three split CSVs."""
    (folder / "images").mkdir(parents=True)
    for split, wnids in SPLIT_CLASSES.items():
        rows = []
        for wnid in wnids:
            for number in IMAGE_NUMBERS:
                name = f"{wnid}{number:08d}.jpg"
                size = (84, 84) if number != 2 else (120, 100)
                Image.new("RGB", size, _colour(wnid, number)).save(folder / "images" / name, quality=95)
                rows.append((name, wnid))
        _write_csv(folder / f"{split}.csv", rows)


def _pickle_contents(split: str) -> dict[str, object]:
    """A learn2learn-style dict: 6 random images, two classes whose index lists are out of order."""
    rng = np.random.default_rng(SPLITS.index(split))
    first, second = sorted(SPLIT_CLASSES[split])[:2]
    return {
        "image_data": rng.integers(0, 256, size=(6, 84, 84, 3), dtype=np.uint8),
        "class_dict": {second: [5, 1, 3], first: [4, 0, 2]},
    }


def _write_pickle_folder(folder: Path) -> dict[str, dict[str, object]]:
    folder.mkdir(parents=True, exist_ok=True)
    contents = {split: _pickle_contents(split) for split in SPLITS}
    for split, remote in PICKLES.items():
        (folder / remote.name).write_bytes(pickle.dumps(contents[split], protocol=4))
    return contents


def _files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def _meta(out_dir: Path) -> dict:
    return json.loads((out_dir / "meta.json").read_text())


def _sentence(out_dir: Path) -> str:
    """The data_origin sentence of what prepare wrote in out_dir."""
    return origin_sentence(load_prepared(out_dir).provenance)


class _RunsACommand:
    """Unpickling this calls os.system, which would write the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


@pytest.fixture(autouse=True)
def no_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MIRROR_ENV, raising=False)


@pytest.fixture
def image_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "byo-images"
    _write_image_folder(folder)
    return folder


def _local(folder: Path, layout: str = "images") -> MiniImagenetSource:
    return MiniImagenetSource(source=str(folder), layout=layout)


DOWNLOAD_IMAGES = MiniImagenetSource(source="download", layout="images")
DOWNLOAD_PICKLES = MiniImagenetSource(source="download", layout="pickles")


# --- params section ----------------------------------------------------------------------------------


def test_the_source_section_is_strict(tmp_path: Path) -> None:
    assert MiniImagenetSource(source=str(tmp_path), layout="pickles").layout == "pickles"
    for bad in (
        {"source": "download", "layout": "tarball"},
        {"source": "download", "layout": "images", "extra": 1},
        {"source": str(tmp_path / "nowhere"), "layout": "images"},
    ):
        with pytest.raises(ValidationError):
            MiniImagenetSource(**bad)
    with pytest.raises(ValidationError):
        DOWNLOAD_IMAGES.layout = "pickles"  # type: ignore[misc]


# --- images layout: local folder, prepare ------------------------------------------------------------


def test_a_local_image_folder_is_copied_with_a_local_origin(image_folder: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    download(raw, _local(image_folder))
    assert sorted(p.name for p in raw.iterdir()) == ["images", "origin.json", "test.csv", "train.csv", "val.csv"]
    assert _files(raw / "images") == _files(image_folder / "images")
    origin = read_origin(raw)
    assert origin is not None and (origin.kind, origin.source, origin.verified) == ("local", str(image_folder), False)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_prepare_decodes_sorts_and_labels_the_images(image_folder: Path, tmp_path: Path) -> None:
    download(tmp_path / "raw", _local(image_folder))
    prepare(tmp_path / "raw", tmp_path / "prepared")
    prepared = load_prepared(tmp_path / "prepared")
    for split, wnids in SPLIT_CLASSES.items():
        data = prepared.splits[split]
        assert data.classes == tuple(sorted(wnids))
        assert data.images.dtype == np.uint8 and data.images.shape == (len(wnids) * 3, 3, 84, 84)
        assert data.labels.dtype == np.int64 and data.labels.tolist() == np.repeat(np.arange(len(wnids)), 3).tolist()
        expected = [_colour(wnid, number) for wnid in sorted(wnids) for number in sorted(IMAGE_NUMBERS)]
        centre_pixels = data.images[:, :, 42, 42].astype(int)
        assert np.abs(centre_pixels - np.array(expected)).max() <= 3  # JPEG rounding
    meta = _meta(tmp_path / "prepared")
    assert meta["counts"] == {"train": 9, "val": 6, "test": 6}
    assert set(meta["provenance"]["class_counts"]["train"].values()) == {3}
    assert list(meta["provenance"]["class_counts"]["val"].values()) == [3, 3]
    assert meta["classes"]["test"] == ["n03000001", "n03000002"]
    assert meta["image_shape"] == [3, 84, 84] and meta["provenance"]["layout"] == "images"
    assert Provenance.model_validate(meta["provenance"]) == prepared.provenance
    sentence = origin_sentence(prepared.provenance)
    assert sentence.startswith(
        "miniImageNet SAMPLE: 21 of the official 60,000 images (3/2/2 classes, 3 per class), split files cut to match;"
    )
    assert f"from the local folder {image_folder} (not checksum-verified)" in sentence


def test_prepare_twice_gives_the_same_bytes(image_folder: Path, tmp_path: Path) -> None:
    prepare(image_folder, tmp_path / "first")
    prepare(image_folder, tmp_path / "second")
    first, second = _files(tmp_path / "first"), _files(tmp_path / "second")
    expected = ["meta.json", *sorted(f"{split}_{kind}.npy" for split in SPLITS for kind in ("images", "labels"))]
    assert sorted(first) == expected
    assert first == second


def test_prepare_replaces_an_earlier_output(image_folder: Path, tmp_path: Path) -> None:
    (tmp_path / "prepared").mkdir()
    (tmp_path / "prepared" / "stale.npy").write_bytes(b"old")
    prepare(image_folder, tmp_path / "prepared")
    assert "stale.npy" not in _files(tmp_path / "prepared")


# --- images layout: every problem, in one error ------------------------------------------------------


def _break_missing_image(folder: Path) -> str:
    (folder / "images" / "n0100000100000001.jpg").unlink()
    return f"{folder / 'images' / 'n0100000100000001.jpg'} is missing (listed in train.csv)"


def _break_undecodable(folder: Path) -> str:
    (folder / "images" / "n0200000100000003.jpg").write_bytes(b"<html>not a jpeg</html>")
    return f"{folder / 'images' / 'n0200000100000003.jpg'} does not decode as an image"


def _break_class_in_two_splits(folder: Path) -> str:
    name = "n0100000100000009.jpg"
    Image.new("RGB", (84, 84)).save(folder / "images" / name)
    with (folder / "val.csv").open("a") as stream:
        stream.write(f"{name},n01000001\n")
    return "class n01000001 is in more than one split (train, val)"


def _break_missing_csv(folder: Path) -> str:
    (folder / "test.csv").unlink()
    return f"{folder / 'test.csv'} is missing"


def _break_header(folder: Path) -> str:
    path = folder / "test.csv"
    path.write_text(path.read_text().replace("filename,label", "file,class", 1))
    return f"{path} starts with 'file,class'"


def _break_row(folder: Path) -> str:
    with (folder / "train.csv").open("a") as stream:
        stream.write("n0100000100000005.jpg,n01000001,extra\n")
    return f"{folder / 'train.csv'} line 11: 'n0100000100000005.jpg,n01000001,extra' is not filename,label"


def _break_label(folder: Path) -> str:
    path = folder / "train.csv"
    path.write_text(path.read_text().replace("n0100000200000003.jpg,n01000002", "n0100000200000003.jpg,n01000003"))
    return "label 'n01000003' does not match the wnid 'n01000002'"


def _break_path(folder: Path) -> str:
    with (folder / "train.csv").open("a") as stream:
        stream.write("../../etc/passwd,../../etc\n")
    return "'../../etc/passwd' is not a plain file name"


BREAKS = [
    _break_missing_image,
    _break_undecodable,
    _break_class_in_two_splits,
    _break_missing_csv,
    _break_header,
    _break_row,
    _break_label,
    _break_path,
]


@pytest.mark.parametrize("break_folder", BREAKS, ids=lambda function: function.__name__.removeprefix("_break_"))
def test_each_problem_is_named(image_folder: Path, tmp_path: Path, break_folder) -> None:
    expected = break_folder(image_folder)
    with pytest.raises(DataError) as raised:
        prepare(image_folder, tmp_path / "prepared")
    message = str(raised.value)
    assert expected in message
    assert "1 problem(s)" in message and "dvc repro download@miniimagenet prepare@miniimagenet" in message
    assert not (tmp_path / "prepared").exists()


def test_every_problem_is_listed_in_one_error(image_folder: Path, tmp_path: Path) -> None:
    coexisting = [break_folder for break_folder in BREAKS if break_folder is not _break_header]  # both on test.csv
    expected = [break_folder(image_folder) for break_folder in coexisting]
    with pytest.raises(DataError) as raised:
        prepare(image_folder, tmp_path / "prepared")
    message = str(raised.value)
    assert f"{len(coexisting)} problem(s)" in message
    for line in expected:
        assert line in message
    assert not (tmp_path / "prepared").exists()


def test_a_failed_prepare_leaves_the_earlier_output_alone(image_folder: Path, tmp_path: Path) -> None:
    prepare(image_folder, tmp_path / "prepared")
    before = _files(tmp_path / "prepared")
    _break_missing_image(image_folder)
    with pytest.raises(DataError):
        prepare(image_folder, tmp_path / "prepared")
    assert _files(tmp_path / "prepared") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["byo-images", "prepared"]


def test_a_folder_in_neither_layout_is_named_with_what_it_lacks(tmp_path: Path) -> None:
    folder = tmp_path / "half"
    folder.mkdir()
    (folder / "train.csv").write_text("filename,label\n")
    (folder / PICKLES["val"].name).write_bytes(b"<html>")
    with pytest.raises(DataError) as raised:
        download(tmp_path / "raw", _local(folder))
    message = str(raised.value)
    for expected in ("images/ (a folder of the images)", "val.csv", "test.csv", PICKLES["train"].name):
        assert expected in message
    assert f"{PICKLES['val'].name} (is not a pickle" in message
    assert not (tmp_path / "raw").exists()


def test_prepare_without_raw_files_says_what_to_run(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    with pytest.raises(DataError, match="dvc repro download@miniimagenet"):
        prepare(tmp_path / "raw", tmp_path / "prepared")


def test_load_prepared_without_outputs_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="dvc repro prepare@miniimagenet"):
        load_prepared(tmp_path / "missing")


# --- pickles layout ----------------------------------------------------------------------------------


def test_a_local_pickle_folder_is_copied_recorded_and_prepared(tmp_path: Path) -> None:
    contents = _write_pickle_folder(tmp_path / "byo-pickles")
    raw = tmp_path / "raw"
    download(raw, _local(tmp_path / "byo-pickles", layout="images"))  # the folder's layout is detected
    names = sorted(remote.name for remote in PICKLES.values())
    assert sorted(p.name for p in raw.iterdir()) == sorted([*names, SHA256SUMS, "origin.json"])
    recorded = {line.split("  ")[1]: line.split("  ")[0] for line in (raw / SHA256SUMS).read_text().splitlines()}
    assert recorded == {name: hashlib.sha256((raw / name).read_bytes()).hexdigest() for name in names}
    prepare(raw, tmp_path / "prepared")
    prepared = load_prepared(tmp_path / "prepared")
    for split in SPLITS:
        data, image_data = prepared.splits[split], contents[split]["image_data"]
        assert data.classes == tuple(sorted(SPLIT_CLASSES[split])[:2])
        assert data.labels.tolist() == [0, 0, 0, 1, 1, 1]
        np.testing.assert_array_equal(data.images, image_data[[0, 2, 4, 1, 3, 5]].transpose(0, 3, 1, 2))
        assert data.images.flags.c_contiguous
    meta = _meta(tmp_path / "prepared")
    assert meta["provenance"]["layout"] == "pickles" and meta["counts"] == {"train": 6, "val": 6, "test": 6}
    assert _sentence(tmp_path / "prepared").startswith(
        "miniImageNet SAMPLE: 18 of the official 60,000 images (2/2/2 classes"
    )


def test_a_pickle_that_runs_code_is_refused_at_prepare(tmp_path: Path) -> None:
    _write_pickle_folder(tmp_path / "byo-pickles")
    marker = tmp_path / "marker"
    evil = tmp_path / "byo-pickles" / PICKLES["test"].name
    evil.write_bytes(pickle.dumps({"image_data": _RunsACommand(marker), "class_dict": {}}))
    download(tmp_path / "raw", _local(tmp_path / "byo-pickles", layout="pickles"))
    with pytest.raises(DataError, match=r"refers to the global (posix|nt|os)\.system") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    assert str(tmp_path / "raw" / PICKLES["test"].name) in str(raised.value)
    assert not marker.exists() and not (tmp_path / "prepared").exists()


def test_a_pickle_changed_after_download_is_not_unpickled(tmp_path: Path) -> None:
    _write_pickle_folder(tmp_path / "byo-pickles")
    download(tmp_path / "raw", _local(tmp_path / "byo-pickles", layout="pickles"))
    changed = tmp_path / "raw" / PICKLES["val"].name
    changed.write_bytes(changed.read_bytes() + b".")
    with pytest.raises(DataError, match="it was not unpickled") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    assert str(changed) in str(raised.value)


def test_a_pickle_without_a_recorded_checksum_is_not_unpickled(tmp_path: Path) -> None:
    _write_pickle_folder(tmp_path / "raw")
    with pytest.raises(DataError, match="has no checksum recorded"):
        prepare(tmp_path / "raw", tmp_path / "prepared")


def test_every_pickle_problem_is_listed_in_one_error(tmp_path: Path) -> None:
    contents = {split: _pickle_contents(split) for split in SPLITS}
    contents["train"]["image_data"] = np.zeros((6, 32, 32, 3), dtype=np.uint8)
    contents["val"]["class_dict"] = {"n02000001": [0, 1, 2], "n02000002": [3, 4, 4]}
    folder = tmp_path / "byo-pickles"
    folder.mkdir()
    for split, remote in PICKLES.items():
        (folder / remote.name).write_bytes(pickle.dumps(contents[split]))
    download(tmp_path / "raw", _local(folder, layout="pickles"))
    with pytest.raises(DataError, match=r"2 problem\(s\)") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    message = str(raised.value)
    assert "image_data is uint8 (6, 32, 32, 3)" in message and "(N, 84, 84, 3)" in message
    assert "each image must be listed exactly once" in message


def test_a_class_in_two_pickled_splits_is_named(tmp_path: Path) -> None:
    contents = {split: _pickle_contents(split) for split in SPLITS}
    contents["test"]["class_dict"]["n02000001"] = contents["test"]["class_dict"].pop("n03000001")
    folder = tmp_path / "byo-pickles"
    folder.mkdir()
    for split, remote in PICKLES.items():
        (folder / remote.name).write_bytes(pickle.dumps(contents[split]))
    download(tmp_path / "raw", _local(folder, layout="pickles"))
    with pytest.raises(DataError, match=r"class n02000001 is in more than one split \(val, test\)"):
        prepare(tmp_path / "raw", tmp_path / "prepared")


# --- download: local HTTP server, mirror -------------------------------------------------------------


def _zip_images(folder: Path, archive: Path) -> bytes:
    """images.zip as the seed ships it: every image under a top folder images/."""
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("images/", b"")
        for path in sorted((folder / "images").iterdir()):
            bundle.write(path, f"images/{path.name}")
    return archive.read_bytes()


@pytest.fixture
def upstream_images(image_folder: Path, tmp_path: Path, server: FileServer) -> MiniImagenet:
    """The server holds image_folder's images.zip and CSVs; miniImageNet with its file table pointing at it (CSVs
    pinned, zip not)."""
    server.routes["/images.zip"] = Route(_zip_images(image_folder, tmp_path / "images.zip"))
    csvs = {}
    for split, remote in SPLIT_CSVS.items():
        body = (image_folder / remote.name).read_bytes()
        server.routes["/" + remote.name] = Route(body)
        csvs[split] = replace(remote, urls=(server.url("/" + remote.name),), sha256=hashlib.sha256(body).hexdigest())
    images_zip = replace(MINIIMAGENET.images_zip, urls=(server.url("/images.zip"),))
    return replace(MINIIMAGENET, split_csvs=csvs, images_zip=images_zip)


def test_download_fetches_the_csvs_and_unpacks_images_zip(
    upstream_images: MiniImagenet, image_folder: Path, tmp_path: Path, server: FileServer
) -> None:
    raw = tmp_path / "raw"
    upstream_images.download(raw, DOWNLOAD_IMAGES)
    expected_names = [SHA256SUMS, "images", "origin.json", "test.csv", "train.csv", "val.csv"]
    assert sorted(p.name for p in raw.iterdir()) == expected_names
    assert _files(raw / "images") == _files(image_folder / "images")
    zip_sha = hashlib.sha256(server.routes["/images.zip"].body).hexdigest()
    assert (raw / SHA256SUMS).read_text() == f"{zip_sha}  images.zip\n"
    origin = read_origin(raw)
    assert origin is not None and (origin.kind, origin.verified) == ("official", False)
    assert server.url("/images.zip") in origin.source and server.url("/train.csv") in origin.source
    assert "images.zip not pinned" in origin.detail and "train.csv, val.csv, test.csv sha256-verified" in origin.detail
    upstream_images.prepare(raw, tmp_path / "prepared")
    sentence = _sentence(tmp_path / "prepared")
    assert sentence.startswith("miniImageNet SAMPLE: 21 of the official 60,000 images")
    assert "the official split files" in sentence and "not all checksum-verified" in sentence


def test_a_changed_images_zip_is_refused_after_the_first_download(
    upstream_images: MiniImagenet, image_folder: Path, tmp_path: Path, server: FileServer
) -> None:
    raw = tmp_path / "raw"
    upstream_images.download(raw, DOWNLOAD_IMAGES)
    (image_folder / "images" / "n0100000100000001.jpg").write_bytes(b"swapped")
    server.routes["/images.zip"] = Route(_zip_images(image_folder, tmp_path / "changed.zip"))
    with pytest.raises(DownloadError, match=r"checksum mismatch for images\.zip") as raised:
        upstream_images.download(raw, DOWNLOAD_IMAGES)
    assert str(raw / SHA256SUMS) in str(raised.value)


def test_a_web_page_in_place_of_images_zip_is_not_trusted(
    upstream_images: MiniImagenet, tmp_path: Path, server: FileServer
) -> None:
    server.routes["/images.zip"] = Route(b"<!DOCTYPE html><title>Google Drive - quota exceeded</title>")
    with pytest.raises(DownloadError, match="Google Drive sends a web page"):
        upstream_images.download(tmp_path / "raw", DOWNLOAD_IMAGES)
    assert not (tmp_path / "raw" / SHA256SUMS).exists() and not (tmp_path / "raw" / "images").exists()


def test_download_fetches_the_pickles_and_records_them(tmp_path: Path, server: FileServer) -> None:
    _write_pickle_folder(tmp_path / "upstream")
    pickles = {}
    for split, remote in PICKLES.items():
        server.routes["/" + remote.name] = Route((tmp_path / "upstream" / remote.name).read_bytes())
        pickles[split] = replace(remote, urls=(server.url("/missing"), server.url("/" + remote.name)))
    dataset = replace(MINIIMAGENET, pickles=pickles)
    dataset.download(tmp_path / "raw", DOWNLOAD_PICKLES)
    assert len((tmp_path / "raw" / SHA256SUMS).read_text().splitlines()) == 3
    dataset.prepare(tmp_path / "raw", tmp_path / "prepared")
    assert load_prepared(tmp_path / "prepared").splits["train"].images.shape == (6, 3, 84, 84)


@pytest.mark.parametrize("layout", ["images", "pickles"])
def test_a_mirror_sample_folder_is_copied_as_a_sample(
    image_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    shutil.copytree(image_folder, tmp_path / "mirror" / MIRROR_FOLDER)
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    raw = tmp_path / "raw"
    download(raw, MiniImagenetSource(source="download", layout=layout))
    assert sorted(p.name for p in raw.iterdir()) == ["images", "origin.json", "test.csv", "train.csv", "val.csv"]
    origin = read_origin(raw)
    assert origin is not None and (origin.kind, origin.verified) == ("sample", False)
    assert origin.source == str(tmp_path / "mirror" / MIRROR_FOLDER)
    prepare(raw, tmp_path / "prepared")
    sentence = _sentence(tmp_path / "prepared")
    assert sentence.startswith("miniImageNet SAMPLE: 21 of the official 60,000 images")
    mirror_dir = tmp_path / "mirror" / MIRROR_FOLDER
    assert sentence.endswith(f"from the mirror folder {mirror_dir} (a sample, not checksum-verified)")


def test_official_pickles_in_the_mirror_are_fetched_as_official(
    tmp_path: Path, server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror_dir = tmp_path / "mirror" / MIRROR_FOLDER
    _write_pickle_folder(mirror_dir)
    pickles = {split: replace(remote, urls=(server.url("/" + remote.name),)) for split, remote in PICKLES.items()}
    dataset = replace(MINIIMAGENET, pickles=pickles)
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    dataset.download(tmp_path / "raw", DOWNLOAD_PICKLES)
    assert server.requests == []
    origin = read_origin(tmp_path / "raw")
    assert origin is not None and (origin.kind, origin.source) == ("official", str(mirror_dir))
    dataset.prepare(tmp_path / "raw", tmp_path / "prepared")


# --- data_origin wording, and the real files where present -------------------------------------------


def test_the_full_set_is_not_called_a_sample(tmp_path: Path) -> None:
    classes = {"train": 64, "val": 16, "test": 20}
    provenance = Provenance(
        dataset="miniimagenet",
        kind="unrecorded",
        source=str(tmp_path),
        verified=False,
        detail="",
        layout="pickles",
        checksum_algorithm="sha256",
        official_classes=MINIIMAGENET.official_classes,
        official_images_per_class=MINIIMAGENET.official_images_per_class,
        class_counts={
            split: {f"n{split}{index:03d}": 600 for index in range(count)} for split, count in classes.items()
        },
    )
    sentence = origin_sentence(provenance)
    assert sentence.startswith("the full miniImageNet (60,000 images, 64/16/20 classes x 600); of unrecorded origin")
    assert "SAMPLE" not in sentence


@pytest.mark.skipif(not (SHARED_DATASETS / "mini-imagenet-split").is_dir(), reason="no shared official split files")
def test_the_pinned_split_checksums_are_those_of_the_official_files() -> None:
    for split, remote in SPLIT_CSVS.items():
        data = (SHARED_DATASETS / "mini-imagenet-split" / remote.name).read_bytes()
        assert hashlib.md5(data).hexdigest() == OFFICIAL_SPLIT_MD5[split]
        assert hashlib.sha256(data).hexdigest() == remote.sha256


@pytest.mark.skipif(not (SHARED_DATASETS / "miniimagenet").is_dir(), reason="no shared miniImageNet sample")
def test_the_shared_mirror_sample_prepares_as_a_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MIRROR_ENV, str(SHARED_DATASETS))
    download(tmp_path / "raw", DOWNLOAD_IMAGES)
    prepare(tmp_path / "raw", tmp_path / "prepared")
    prepared = load_prepared(tmp_path / "prepared")
    assert {split: len(prepared.splits[split].classes) for split in SPLITS} == {"train": 64, "val": 16, "test": 20}
    assert origin_sentence(prepared.provenance) == (
        "miniImageNet SAMPLE: 2,000 of the official 60,000 images (64/16/20 classes, 20 per class), "
        f"split files cut to match; from the mirror folder {SHARED_DATASETS / MIRROR_FOLDER} "
        "(a sample, not checksum-verified)"
    )


def test_a_missing_pickle_is_named(tmp_path: Path) -> None:
    _write_pickle_folder(tmp_path / "byo-pickles")
    download(tmp_path / "raw", _local(tmp_path / "byo-pickles", layout="pickles"))
    (tmp_path / "raw" / PICKLES["val"].name).unlink()
    with pytest.raises(DataError, match=r"1 problem\(s\)") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    assert f"{tmp_path / 'raw' / PICKLES['val'].name} is missing" in str(raised.value)


def test_a_failed_download_leaves_no_stale_origin(
    upstream_images: MiniImagenet, image_folder: Path, tmp_path: Path, server: FileServer
) -> None:
    raw = tmp_path / "raw"
    upstream_images.download(raw, _local(image_folder))
    del server.routes["/images.zip"]
    gone = replace(upstream_images, images_zip=replace(upstream_images.images_zip, urls=(server.url("/gone.zip"),)))
    with pytest.raises(DownloadError, match=r"images\.zip"):
        gone.download(raw, DOWNLOAD_IMAGES)
    assert read_origin(raw) is None


def test_a_csv_with_a_byte_order_mark_is_read(image_folder: Path, tmp_path: Path) -> None:
    path = image_folder / "val.csv"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    prepare(image_folder, tmp_path / "prepared")
    assert load_prepared(tmp_path / "prepared").splits["val"].labels.size == 6


def test_an_unsafe_images_zip_is_refused_and_nothing_is_extracted(
    upstream_images: MiniImagenet, tmp_path: Path, server: FileServer
) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("images/n0100000100000001.jpg", b"")
        bundle.writestr("../../outside.txt", b"evil")
    server.routes["/images.zip"] = Route(archive.read_bytes())
    with pytest.raises(DataError, match=r"'\.\./\.\./outside\.txt' has a '\.\.' component"):
        upstream_images.download(tmp_path / "raw", DOWNLOAD_IMAGES)
    assert not (tmp_path / "raw" / "images").exists() and not (tmp_path / "outside.txt").exists()


def test_official_files_in_the_mirror_win_over_a_sample_folder(
    upstream_images: MiniImagenet,
    image_folder: Path,
    tmp_path: Path,
    server: FileServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mirror_dir = tmp_path / "mirror" / MIRROR_FOLDER
    shutil.copytree(image_folder, mirror_dir)  # images/ and the CSVs: a sample folder...
    (mirror_dir / "images.zip").write_bytes(server.routes["/images.zip"].body)  # ...plus the official images.zip
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    upstream_images.download(tmp_path / "raw", DOWNLOAD_IMAGES)
    assert server.requests == []
    origin = read_origin(tmp_path / "raw")
    assert origin is not None and (origin.kind, origin.source) == ("official", str(mirror_dir))
    assert not (tmp_path / "raw" / "images.zip").exists()
    assert _files(tmp_path / "raw" / "images") == _files(image_folder / "images")


def test_an_invalid_origin_record_is_named(image_folder: Path, tmp_path: Path) -> None:
    (image_folder / "origin.json").write_text('{"dataset": "miniimagenet", "kind": "borrowed"}')
    with pytest.raises(DataError, match="is not a valid origin record") as raised:
        prepare(image_folder, tmp_path / "prepared")
    assert str(image_folder / "origin.json") in str(raised.value)


def test_load_prepared_refuses_arrays_prepare_did_not_write(image_folder: Path, tmp_path: Path) -> None:
    prepare(image_folder, tmp_path / "prepared")
    np.save(tmp_path / "prepared" / "val_labels.npy", np.array([0, 1, 2, 3, 4, 5], dtype=np.int64))
    with pytest.raises(DataError, match=r"val_\*\.npy are not what prepare writes"):
        load_prepared(tmp_path / "prepared")
