"""hotdog: the class-folder scanner, download (local folder, mirror stand-in, local HTTP server), prepare, load."""

import hashlib
import json
import shutil
import stat
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from parabench.data.class_folders import class_folder_layout, scan_class_folders
from parabench.data.fetch import MIRROR_ENV
from parabench.data.hotdog import HOTDOG, HOTDOG_ZIP, Hotdog
from parabench.data.provenance import Provenance, read_origin
from parabench.data.registry import DATASETS, origin_sentence, origin_summary, origin_tag
from parabench.data.source import DataSource
from parabench.errors import DataError, DownloadError
from tests.http_server import FileServer, Route

# Listed out of order, with names whose string order differs from their numeric order: the scan sorts both.
CLASS_FILES = {
    "train": {"not-hotdog": ["2.png", "10.png", "1.png"], "hotdog": ["3.png", "1.jpg"]},
    "test": {"not-hotdog": ["1.png"], "hotdog": ["7.png", "5.png"]},
}
CLASSES = ("hotdog", "not-hotdog")
SPLITS = ("train", "test")
LAYOUT = class_folder_layout(SPLITS)
MIRROR_FOLDER = HOTDOG.mirror_folder
DOWNLOAD = DataSource(source="download")
download, prepare, load_prepared = HOTDOG.download, HOTDOG.prepare, HOTDOG.load_prepared
SHARED_HOTDOG = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "hotdog"


def _colour(split: str, name: str, file_name: str) -> tuple[int, int, int]:
    """A distinct solid colour per image, so the decoded rows can be told apart."""
    return (40 + 150 * (split == "test"), 60 + 120 * (name == "hotdog"), 20 * int(file_name.split(".")[0]))


def _write_folder(folder: Path) -> None:
    """A folder in d2l's layout: 20 x 30 px photos (PNG, and one JPEG), plus hidden clutter to be skipped."""
    for split, by_class in CLASS_FILES.items():
        for name, file_names in by_class.items():
            (folder / split / name).mkdir(parents=True)
            for file_name in file_names:
                image = Image.new("RGB", (30, 20), _colour(split, name, file_name))
                image.save(folder / split / name / file_name, format="JPEG" if file_name.endswith(".jpg") else "PNG")
    (folder / "train" / "hotdog" / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (folder / "train" / "hotdog" / "._3.png").write_bytes(b"AppleDouble")
    (folder / "test" / ".ipynb_checkpoints").mkdir()


def _sorted_files(split: str, name: str) -> list[str]:
    return sorted(CLASS_FILES[split][name])


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _visible_tree(folder: Path) -> dict[str, bytes]:
    return {name: data for name, data in _tree(folder).items() if not any(part[0] == "." for part in name.split("/"))}


def _zip_folder(folder: Path, archive: Path) -> bytes:
    """hotdog.zip as d2l ships it: hotdog/{train,test}/<class>/<file>, every member under the top folder hotdog/."""
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("hotdog/", b"")
        for path in sorted(folder.rglob("*")):
            name = "hotdog/" + path.relative_to(folder).as_posix()
            if path.is_dir():
                bundle.writestr(name + "/", b"")
            else:
                bundle.write(path, name)
    return archive.read_bytes()


def _pin(body: bytes, *urls: str) -> Hotdog:
    """hotdog with its archive at the URLs, pinned by the sha1 of body."""
    return replace(HOTDOG, archive=replace(HOTDOG_ZIP, urls=urls, sha1=hashlib.sha1(body).hexdigest()))


def _meta(out_dir: Path) -> dict:
    return json.loads((out_dir / "meta.json").read_text())


def _sentence(out_dir: Path) -> str:
    """The data_origin sentence of what prepare wrote in out_dir."""
    return origin_sentence(load_prepared(out_dir).provenance)


@pytest.fixture(autouse=True)
def no_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MIRROR_ENV, raising=False)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "byo-hotdog"
    _write_folder(folder)
    return folder


@pytest.fixture
def upstream(folder: Path, tmp_path: Path, server: FileServer) -> Hotdog:
    """hotdog.zip on the server's second URL (the first answers 404); hotdog with its sha1 pinned."""
    body = _zip_folder(folder, tmp_path / "upstream.zip")
    server.routes["/gluon/hotdog.zip"] = Route(body)
    return _pin(body, server.url("/d2l/hotdog.zip"), server.url("/gluon/hotdog.zip"))


# --- the pin and the registry ------------------------------------------------------------------------


def test_hotdog_zip_is_pinned_by_d2ls_sha1_and_registered() -> None:
    assert HOTDOG_ZIP.pin == ("sha1", "fba480ffa8aa7e0febbb511d181409f899b9baa5")
    assert HOTDOG_ZIP.urls == (
        "http://d2l-data.s3-accelerate.amazonaws.com/hotdog.zip",
        "https://apache-mxnet.s3-accelerate.amazonaws.com/gluon/dataset/hotdog.zip",
    )
    assert DATASETS["hotdog"] is HOTDOG and HOTDOG.source_model is DataSource and HOTDOG.resources == (HOTDOG_ZIP,)


# --- the class-folder scanner ------------------------------------------------------------------------


def test_the_scan_sorts_classes_and_files_and_skips_hidden_names(folder: Path) -> None:
    scanned = scan_class_folders(folder, SPLITS)
    assert scanned.problems == ()
    assert scanned.classes == CLASSES
    assert [path.name for path in scanned.files["train"]["not-hotdog"]] == ["1.png", "10.png", "2.png"]
    assert [path.name for path in scanned.files["train"]["hotdog"]] == ["1.jpg", "3.png"]
    expected = [
        folder / split / name / file
        for split in ("train", "test")
        for name in CLASSES
        for file in _sorted_files(split, name)
    ]
    assert scanned.paths() == expected
    assert scanned.labels("train") == [0, 0, 1, 1, 1] and scanned.labels("test") == [0, 0, 1]


def test_the_scan_collects_every_layout_problem(folder: Path) -> None:
    for path in (folder / "train" / "not-hotdog").iterdir():
        path.unlink()
    (folder / "train" / "extra").mkdir()
    (folder / "train" / "extra" / "1.png").write_bytes(b"")
    (folder / "train" / "notes.txt").write_text("stray")
    (folder / "test" / "hotdog" / "sub").mkdir()
    problems = scan_class_folders(folder, SPLITS).problems
    starts = (
        f"{folder / 'train' / 'not-hotdog'} is an empty class folder",
        f"{folder / 'train' / 'notes.txt'} is a file directly inside train/",
        f"{folder / 'test' / 'hotdog' / 'sub'} is a folder inside a class folder",
        f"class 'extra' is in train/ but {folder / 'test' / 'extra'} is missing",
    )
    assert len(problems) == len(starts), problems
    assert all(problem.startswith(start) for problem, start in zip(problems, starts)), problems


def test_the_scan_names_a_missing_split_and_a_split_without_classes(folder: Path, tmp_path: Path) -> None:
    shutil.rmtree(folder / "test")
    [missing] = scan_class_folders(folder, SPLITS).problems
    assert missing.startswith(f"{folder / 'test'} is missing"), missing
    shutil.rmtree(folder / "train")
    (folder / "train").mkdir()
    assert f"{folder / 'train'} holds no class folders" in scan_class_folders(folder, SPLITS).problems[0]
    assert scan_class_folders(tmp_path / "nowhere", SPLITS).problems == (
        f"{tmp_path / 'nowhere'} does not exist or is not a folder",
    )


# --- download: d2l's hotdog.zip from a local HTTP server or the mirror -------------------------------


def test_download_fetches_verifies_and_unpacks_hotdog_zip(
    upstream: Hotdog, folder: Path, tmp_path: Path, server: FileServer
) -> None:
    raw = tmp_path / "raw"
    upstream.download(raw, DOWNLOAD)
    assert server.requests_for("/d2l/hotdog.zip") == [None] and server.requests_for("/gluon/hotdog.zip") == [None]
    assert sorted(p.name for p in raw.iterdir()) == ["origin.json", "test", "train"]
    assert {name: data for name, data in _tree(raw).items() if name != "origin.json"} == _tree(folder)
    origin = read_origin(raw)
    assert origin is not None
    assert (origin.kind, origin.source, origin.verified) == ("official", server.url("/gluon/hotdog.zip"), True)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    prepare(raw, tmp_path / "prepared")
    assert _sentence(tmp_path / "prepared") == (
        "a hotdog-layout folder: 5 train + 3 test images, 2 classes (hotdog, not-hotdog), "
        f"NOT d2l's hotdog.zip (2,000 + 800 images); official files from {server.url('/gluon/hotdog.zip')}, "
        "sha1-verified"
    )


def test_the_mirrors_hotdog_zip_wins_over_its_folders_and_needs_no_network(
    upstream: Hotdog, folder: Path, tmp_path: Path, server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror_dir = tmp_path / "mirror" / MIRROR_FOLDER
    shutil.copytree(folder, mirror_dir)  # a stand-in folder...
    (mirror_dir / "hotdog.zip").write_bytes(server.routes["/gluon/hotdog.zip"].body)  # ...and the pinned archive
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    upstream.download(tmp_path / "raw", DOWNLOAD)
    assert server.requests == []
    origin = read_origin(tmp_path / "raw")
    assert origin is not None and (origin.kind, origin.source, origin.verified) == ("official", str(mirror_dir), True)
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["origin.json", "test", "train"]


def test_a_checksum_mismatch_is_named_and_leaves_no_raw_folder(
    upstream: Hotdog, tmp_path: Path, server: FileServer
) -> None:
    url = server.url("/gluon/hotdog.zip")
    pinned = _pin(b"d2l's real hotdog.zip", url)
    with pytest.raises(DownloadError) as raised:
        pinned.download(tmp_path / "raw", DOWNLOAD)
    message = str(raised.value)
    served = hashlib.sha1(server.routes["/gluon/hotdog.zip"].body).hexdigest()
    for expected in (f"expected sha1 {pinned.archive.sha1}", f"got {served}", url, "deleted"):
        assert expected in message
    assert MIRROR_ENV in message and "hotdog/hotdog.zip" in message
    assert "params.yaml data.hotdog.source" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["byo-hotdog", "upstream.zip"]


def test_every_source_tried_is_listed_with_what_to_do(
    tmp_path: Path, server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mirror" / MIRROR_FOLDER).mkdir(parents=True)  # neither hotdog.zip nor a stand-in folder
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    urls = (server.url("/d2l/hotdog.zip"), server.url("/gluon/hotdog.zip"))
    with pytest.raises(DownloadError) as raised:
        _pin(b"anything", *urls).download(tmp_path / "raw", DOWNLOAD)
    message = str(raised.value)
    for expected in (str(tmp_path / "mirror" / MIRROR_FOLDER / "hotdog.zip"), *urls, "HTTP 404", "To fix:"):
        assert expected in message
    assert not (tmp_path / "raw").exists()


def test_a_failed_download_forgets_the_earlier_origin(
    upstream: Hotdog, folder: Path, tmp_path: Path, server: FileServer
) -> None:
    raw = tmp_path / "raw"
    upstream.download(raw, DataSource(source=str(folder)))
    del server.routes["/gluon/hotdog.zip"]
    with pytest.raises(DownloadError, match=r"hotdog\.zip"):
        upstream.download(raw, DOWNLOAD)
    assert read_origin(raw) is None and not (raw / "hotdog.zip").exists()


def _add_member(archive: Path, name: str, data: bytes, *, symlink: bool = False) -> None:
    """Append a member to the archive, marked as a symbolic link (as `zip --symlinks` writes one) if asked."""
    info = zipfile.ZipInfo(name)
    if symlink:
        info.create_system = 3  # unix
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(archive, "a") as bundle:
        bundle.writestr(info, data)


@pytest.mark.parametrize(
    ("member", "reason", "symlink"),
    [
        ("/tmp/hotdog-escape.png", "is an absolute path", False),
        ("hotdog/train/hotdog/../../../../escape.png", "has a '..' component", False),
        ("hotdog/train/hotdog/link.png", "is a symbolic link", True),
    ],
    ids=["absolute", "dotdot", "symlink"],
)
def test_an_unsafe_hotdog_zip_is_refused_at_download_and_nothing_is_extracted(
    folder: Path,
    tmp_path: Path,
    server: FileServer,
    member: str,
    reason: str,
    symlink: bool,
) -> None:
    archive = tmp_path / "evil.zip"
    _zip_folder(folder, archive)
    _add_member(archive, member, b"/etc/passwd" if symlink else b"evil", symlink=symlink)
    server.routes["/hotdog.zip"] = Route(archive.read_bytes())
    with pytest.raises(DataError) as raised:
        _pin(archive.read_bytes(), server.url("/hotdog.zip")).download(tmp_path / "raw", DOWNLOAD)
    assert f"member {member!r} {reason}" in str(raised.value) and "nothing was extracted" in str(raised.value)
    assert not (tmp_path / "raw").exists() and not (tmp_path / "escape.png").exists()
    assert not Path("/tmp/hotdog-escape.png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["byo-hotdog", "evil.zip"]


# --- download: a local folder, the mirror's stand-in folder ------------------------------------------


def test_a_local_folder_is_copied_without_hidden_files_and_with_a_local_origin(folder: Path, tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    download(raw, DataSource(source=str(folder)))
    assert sorted(p.name for p in raw.iterdir()) == ["origin.json", "test", "train"]
    assert {name: data for name, data in _tree(raw).items() if name != "origin.json"} == _visible_tree(folder)
    origin = read_origin(raw)
    assert origin is not None and (origin.kind, origin.source, origin.verified) == ("local", str(folder), False)
    assert "bring-your-own folder copied without checksum verification, not d2l's hotdog.zip" in origin.detail
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_local_folder_with_a_bad_layout_is_refused_with_every_problem(folder: Path, tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "kept.txt").write_text("earlier download")
    shutil.rmtree(folder / "test")
    (folder / "train" / "notes.txt").write_text("stray")
    with pytest.raises(DataError) as raised:
        download(tmp_path / "raw", DataSource(source=str(folder)))
    message = str(raised.value)
    for expected in (
        f"the hotdog folder {folder} has 2 problem(s)",
        f"{folder / 'test'} is missing",
        f"{folder / 'train' / 'notes.txt'} is a file directly inside train/",
        LAYOUT,
        "params.yaml data.hotdog.source",
    ):
        assert expected in message
    assert sorted(p.name for p in (tmp_path / "raw").iterdir()) == ["kept.txt"]


def test_the_mirrors_stand_in_folder_is_copied_as_a_local_folder(
    folder: Path, tmp_path: Path, server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror_dir = tmp_path / "mirror" / MIRROR_FOLDER
    shutil.copytree(folder, mirror_dir)
    monkeypatch.setenv(MIRROR_ENV, str(tmp_path / "mirror"))
    raw = tmp_path / "raw"
    _pin(b"anything", server.url("/hotdog.zip")).download(raw, DOWNLOAD)
    assert server.requests == []
    origin = read_origin(raw)
    assert origin is not None and (origin.kind, origin.source, origin.verified) == ("local", str(mirror_dir), False)
    assert origin.detail == (
        "the mirror's stand-in folder in d2l's layout, not d2l's hotdog.zip, copied without checksum verification"
    )
    prepare(raw, tmp_path / "prepared")
    provenance = load_prepared(tmp_path / "prepared").provenance
    assert origin_sentence(provenance) == (
        "a hotdog-layout folder: 5 train + 3 test images, 2 classes (hotdog, not-hotdog), "
        f"NOT d2l's hotdog.zip (2,000 + 800 images); from the local folder {mirror_dir} (not checksum-verified)"
    )
    assert origin_summary(provenance) == (
        "a hotdog-layout folder: 5 train + 3 test images, 2 classes, NOT d2l's hotdog.zip"
    )
    assert origin_tag(provenance) == "hotdog-layout folder, 8 images, NOT d2l's", "the stand-in is no sample of it"


# --- prepare and load_prepared -----------------------------------------------------------------------


def test_prepare_squashes_sorts_and_labels_the_images(folder: Path, tmp_path: Path) -> None:
    download(tmp_path / "raw", DataSource(source=str(folder)))
    prepare(tmp_path / "raw", tmp_path / "prepared")
    prepared = load_prepared(tmp_path / "prepared")
    for split in SPLITS:
        images, labels = prepared.splits[split].images, prepared.splits[split].labels
        assert prepared.splits[split].classes == CLASSES
        files = [(name, file) for name in CLASSES for file in _sorted_files(split, name)]
        assert images.dtype == np.uint8 and images.shape == (len(files), 3, 256, 256)
        assert labels.dtype == np.int64 and labels.tolist() == [CLASSES.index(name) for name, _ in files]
        expected = np.array([_colour(split, name, file) for name, file in files])
        for corner in ((0, 0), (128, 128), (255, 255)):  # a solid photo stays solid when squashed
            assert np.abs(images[:, :, corner[0], corner[1]].astype(int) - expected).max() <= 3  # JPEG rounding
    meta = _meta(tmp_path / "prepared")
    assert meta["dataset"] == "hotdog" and meta["image_shape"] == [3, 256, 256] and "squashed" in meta["resize"]
    assert meta["classes"] == {"train": list(CLASSES), "test": list(CLASSES)}
    assert meta["counts"] == {"train": 5, "test": 3}
    class_counts = {"train": {"hotdog": 2, "not-hotdog": 3}, "test": {"hotdog": 2, "not-hotdog": 1}}
    assert meta["provenance"]["class_counts"] == class_counts
    assert Provenance.model_validate(meta["provenance"]) == prepared.provenance
    assert origin_sentence(prepared.provenance) == (
        "a hotdog-layout folder: 5 train + 3 test images, 2 classes (hotdog, not-hotdog), "
        f"NOT d2l's hotdog.zip (2,000 + 800 images); from the local folder {folder} (not checksum-verified)"
    )


def test_prepare_twice_gives_the_same_bytes(folder: Path, tmp_path: Path) -> None:
    prepare(folder, tmp_path / "first")
    prepare(folder, tmp_path / "second")
    first, second = _tree(tmp_path / "first"), _tree(tmp_path / "second")
    expected = ["meta.json", "test_images.npy", "test_labels.npy", "train_images.npy", "train_labels.npy"]
    assert sorted(first) == expected
    assert first == second


def test_every_problem_is_reported_in_one_error_and_nothing_is_written(folder: Path, tmp_path: Path) -> None:
    (folder / "train" / "hotdog" / "4.png").write_bytes(b"<html>not a png</html>")
    for path in (folder / "test" / "not-hotdog").iterdir():
        path.unlink()
    (folder / "train" / "extra").mkdir()
    Image.new("RGB", (30, 20)).save(folder / "train" / "extra" / "1.png")
    (folder / "train" / "notes.txt").write_text("stray")
    with pytest.raises(DataError) as raised:
        prepare(folder, tmp_path / "prepared")
    message = str(raised.value)
    for expected in (
        f"the hotdog folder {folder} has 4 problem(s)",
        f"{folder / 'train' / 'hotdog' / '4.png'} does not decode as an image",
        f"{folder / 'test' / 'not-hotdog'} is an empty class folder",
        f"class 'extra' is in train/ but {folder / 'test' / 'extra'} is missing",
        f"{folder / 'train' / 'notes.txt'} is a file directly inside train/",
        "dvc repro download@hotdog prepare@hotdog",
    ):
        assert expected in message
    assert not (tmp_path / "prepared").exists()


def test_a_missing_split_is_named_and_a_failed_prepare_keeps_the_earlier_output(folder: Path, tmp_path: Path) -> None:
    prepare(folder, tmp_path / "prepared")
    before = _tree(tmp_path / "prepared")
    shutil.rmtree(folder / "test")
    with pytest.raises(DataError, match=r"1 problem\(s\)") as raised:
        prepare(folder, tmp_path / "prepared")
    assert f"{folder / 'test'} is missing" in str(raised.value)
    assert _tree(tmp_path / "prepared") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["byo-hotdog", "prepared"]


def test_prepare_without_a_raw_folder_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist") as raised:
        prepare(tmp_path / "raw", tmp_path / "prepared")
    assert "dvc repro download@hotdog prepare@hotdog" in str(raised.value)


def _record(**origin: object) -> Provenance:
    """hotdog's provenance record with d2l's counts and the given origin fields."""
    counts = {"train": {"hotdog": 1000, "not-hotdog": 1000}, "test": {"hotdog": 400, "not-hotdog": 400}}
    return Provenance(
        dataset="hotdog",
        detail="",
        checksum_algorithm="sha1",
        layout="class folders",
        class_counts=counts,
        official_classes=HOTDOG.official_classes,
        official_images_per_class=HOTDOG.official_images_per_class,
        **origin,
    )


def test_d2ls_counts_from_the_verified_archive_are_called_d2ls_hotdog() -> None:
    official = _record(kind="official", source="https://d2l", verified=True)
    sentence = origin_sentence(official)
    assert (
        sentence
        == "d2l's hotdog (2,000 train + 800 test images, 2 classes); official files from https://d2l, sha1-verified"
    )
    assert origin_summary(official) == origin_tag(official) == "d2l's hotdog"
    assert (
        origin_tag(_record(kind="local", source="/byo", verified=False))
        == "folder with d2l's hotdog counts, unverified"
    )
    sentence = origin_sentence(_record(kind="local", source="/byo", verified=False))
    assert sentence.startswith("an image folder with d2l's hotdog counts (2,000 train + 800 test images, 2 classes)")
    assert sentence.endswith("not verified to be d2l's hotdog.zip; from the local folder /byo (not checksum-verified)")


def test_load_prepared_without_outputs_says_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="run `dvc repro prepare@hotdog` first"):
        load_prepared(tmp_path / "missing")


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:200])


def _relabel(path: Path) -> None:
    np.save(path, np.array([0, 0, 1, 1, 2], dtype=np.int64))


def _wrong_meta(path: Path) -> None:
    meta = json.loads(path.read_text())
    meta["counts"]["train"] = 6
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("name", "corrupt", "named"),
    [
        ("train_images.npy", _truncate, "train_*.npy do not load as arrays"),
        ("train_labels.npy", _relabel, "train_*.npy are not what prepare writes"),
        ("meta.json", _wrong_meta, "meta.json is not what prepare writes"),
    ],
    ids=["truncated-images", "label-out-of-range", "meta-counts"],
)
def test_load_prepared_refuses_a_corrupted_folder_naming_the_stage(
    folder: Path, tmp_path: Path, name: str, corrupt, named: str
) -> None:
    prepare(folder, tmp_path / "prepared")
    corrupt(tmp_path / "prepared" / name)
    with pytest.raises(DataError, match="run `dvc repro prepare@hotdog` again") as raised:
        load_prepared(tmp_path / "prepared")
    assert named in str(raised.value) and str(tmp_path / "prepared") in str(raised.value)


@pytest.mark.skipif(not SHARED_HOTDOG.is_dir(), reason="no shared hotdog stand-in folder")
def test_the_shared_stand_in_folder_prepares_as_not_d2ls_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MIRROR_ENV, str(SHARED_HOTDOG.parent))
    download(tmp_path / "raw", DOWNLOAD)
    prepare(tmp_path / "raw", tmp_path / "prepared")
    prepared = load_prepared(tmp_path / "prepared")
    counts = {
        split: sum(1 for path in (SHARED_HOTDOG / split).rglob("*") if path.is_file() and not path.name.startswith("."))
        for split in ("train", "test")
    }
    assert prepared.splits["train"].images.shape == (counts["train"], 3, 256, 256)
    assert prepared.splits["test"].images.shape == (counts["test"], 3, 256, 256)
    assert origin_sentence(prepared.provenance) == (
        f"a hotdog-layout folder: {counts['train']:,} train + {counts['test']:,} test images, 2 classes (hotdog, "
        "not-hotdog), NOT d2l's hotdog.zip (2,000 + 800 images); from the local folder "
        f"{SHARED_HOTDOG} (not checksum-verified)"
    )
