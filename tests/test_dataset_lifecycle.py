"""The dataset lifecycle on a toy dataset defined here: a new dataset in the class-folder layout is one declaration
and one registry line, and download, prepare and load_prepared run for it with no other code; its provenance is a
record, and the data_origin sentence and summary are rendered from it."""

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from parabench.data.class_folder_dataset import ClassFolderDataset
from parabench.data.fetch import MIRROR_ENV, RemoteFile
from parabench.data.provenance import Provenance, origin_source, read_origin
from parabench.data.registry import DATASETS, origin_sentence, origin_summary, origin_tag
from parabench.data.source import DataSource
from parabench.errors import DataError
from tests.http_server import FileServer, Route

SPLITS = ("train", "val", "test")
CLASSES = ("circle", "square")
COLOURS = {"circle": (200, 30, 30), "square": (30, 30, 200)}
PER_CLASS = {"train": 3, "val": 1, "test": 2}


TOY_ARCHIVE = RemoteFile("toy.zip", (), sha256=None)


def toy(archive: RemoteFile = TOY_ARCHIVE) -> ClassFolderDataset:
    """A toy dataset of solid-colour photos in three splits, prepared at 3 x 8 x 8: its whole declaration."""
    return ClassFolderDataset(
        name="toy",
        title="Toy Shapes",
        splits=SPLITS,
        mirror_folder="toy",
        image_shape=(3, 8, 8),
        official_classes={split: len(CLASSES) for split in SPLITS},
        official_images_per_class=PER_CLASS,
        archive=archive,
    )


def write_folder(folder: Path, per_class: dict[str, int]) -> Path:
    """<split>/<class>/<n>.png: 12 x 10 px photos of their class's colour."""
    for split, count in per_class.items():
        for name in CLASSES:
            (folder / split / name).mkdir(parents=True)
            for number in range(count):
                Image.new("RGB", (12, 10), COLOURS[name]).save(folder / split / name / f"{number}.png")
    return folder


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy's registry line, and no mirror."""
    monkeypatch.setitem(DATASETS, "toy", toy())
    monkeypatch.delenv(MIRROR_ENV, raising=False)


def test_a_local_folder_downloads_prepares_and_loads_back(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "byo", {"train": 2, "val": 1, "test": 1})
    dataset = DATASETS["toy"]
    origin = dataset.download(tmp_path / "raw", DataSource(source=str(folder)))
    assert origin == read_origin(tmp_path / "raw")
    assert (origin.dataset, origin.kind, origin.source, origin.verified) == ("toy", "local", str(folder), False)
    dataset.prepare(tmp_path / "raw", tmp_path / "prepared")
    prepared = dataset.load_prepared(tmp_path / "prepared")
    assert list(prepared.splits) == list(SPLITS)
    for split, count in {"train": 2, "val": 1, "test": 1}.items():
        arrays = prepared.splits[split]
        assert arrays.classes == CLASSES
        assert arrays.images.dtype == np.uint8 and arrays.images.shape == (2 * count, 3, 8, 8)
        assert arrays.labels.dtype == np.int64 and arrays.labels.tolist() == [0] * count + [1] * count
        expected = np.array([COLOURS[CLASSES[label]] for label in arrays.labels])
        assert np.array_equal(arrays.images[:, :, 4, 4], expected), "a solid photo stays solid when squashed"
    record = prepared.provenance
    assert (record.dataset, record.kind, record.source, record.verified) == ("toy", "local", str(folder), False)
    assert record.layout == "class folders" and record.checksum_algorithm == "sha256"
    assert record.class_counts == {
        "train": {"circle": 2, "square": 2},
        "val": {"circle": 1, "square": 1},
        "test": {"circle": 1, "square": 1},
    }
    assert record.counts == {"train": 4, "val": 2, "test": 2} and not record.complete
    assert record.official_counts == {"train": 6, "val": 2, "test": 4}
    meta = json.loads((tmp_path / "prepared" / "meta.json").read_text())
    assert meta["classes"] == {split: list(CLASSES) for split in SPLITS} and meta["image_shape"] == [3, 8, 8]
    assert Provenance.model_validate(meta["provenance"]) == record
    assert origin_sentence(record) == (
        "Toy Shapes SAMPLE: 8 of the official 12 images (4 train, 2 val, 2 test); "
        f"from the local folder {folder} (not checksum-verified)"
    )


def test_the_published_zip_is_fetched_verified_and_unpacked(tmp_path: Path, server: FileServer) -> None:
    folder = write_folder(tmp_path / "upstream", PER_CLASS)
    archive = tmp_path / "toy.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        for path in sorted(folder.rglob("*.png")):
            bundle.write(path, "toy/" + path.relative_to(folder).as_posix())
    server.routes["/toy.zip"] = Route(archive.read_bytes())
    pinned = RemoteFile("toy.zip", (server.url("/toy.zip"),), sha256=hashlib.sha256(archive.read_bytes()).hexdigest())
    dataset = toy(pinned)
    dataset.download(tmp_path / "raw", DataSource(source="download"))
    assert sorted(path.name for path in (tmp_path / "raw").iterdir()) == ["origin.json", *sorted(SPLITS)]
    prepared = dataset.prepare(tmp_path / "raw", tmp_path / "prepared")
    assert prepared.provenance.complete and prepared.provenance.verified
    assert dataset.origin_sentence(prepared.provenance) == (
        "the full Toy Shapes (12 images: 6 train, 2 val, 4 test); "
        f"official files from {server.url('/toy.zip')}, sha256-verified"
    )


def test_a_bad_layout_is_refused_with_every_problem(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "byo", {"train": 1, "test": 1})  # no val/
    (folder / "train" / "circle" / "0.png").write_bytes(b"not a png")
    with pytest.raises(DataError) as raised:
        DATASETS["toy"].prepare(folder, tmp_path / "prepared")
    message = str(raised.value)
    for expected in (
        "has 2 problem(s)",
        f"{folder / 'val'} is missing",
        "0.png does not decode as an image",
        "val/<class>/<image files>",
        "dvc repro download@toy prepare@toy",
    ):
        assert expected in message
    assert not (tmp_path / "prepared").exists()


def test_a_folder_prepared_for_another_dataset_is_refused(tmp_path: Path) -> None:
    hotdog_like = write_folder(tmp_path / "two-splits", {"train": 1, "test": 1})
    DATASETS["hotdog"].prepare(hotdog_like, tmp_path / "hotdog")
    (tmp_path / "hotdog" / "val_images.npy").write_bytes((tmp_path / "hotdog" / "test_images.npy").read_bytes())
    (tmp_path / "hotdog" / "val_labels.npy").write_bytes((tmp_path / "hotdog" / "test_labels.npy").read_bytes())
    with pytest.raises(DataError, match=r"meta\.json is not what prepare writes.*prepare@toy"):
        DATASETS["toy"].load_prepared(tmp_path / "hotdog")


def test_the_sentence_summary_and_tag_are_rendered_from_the_record() -> None:
    """Made by hand, as a results file carries it: no sentence is parsed back."""
    record = Provenance(
        dataset="toy",
        kind="sample",
        source="/mirror/toy",
        verified=False,
        detail="a sample",
        layout="class folders",
        checksum_algorithm="sha256",
        class_counts={split: {"circle": 1, "square": 2} for split in SPLITS},
        official_classes=dict.fromkeys(SPLITS, 2),
        official_images_per_class=PER_CLASS,
    )
    as_data = json.loads(json.dumps(record.model_dump()))
    assert Provenance.model_validate(as_data) == record
    assert origin_summary(record) == "Toy Shapes SAMPLE: 9 of the official 12 images"
    assert origin_source(record) == "from the mirror folder /mirror/toy (a sample, not checksum-verified)"
    assert origin_sentence(record) == f"{origin_summary(record)} (3 train, 3 val, 3 test); {origin_source(record)}"
    unrecorded = record.model_copy(update={"kind": "unrecorded", "source": "data/raw/toy"})
    assert origin_source(unrecorded) == (
        "of unrecorded origin (data/raw/toy has no origin.json; re-run the download stage to record it)"
    )
    assert origin_tag(record) == "Toy Shapes SAMPLE, 9 of 12", "a sample says so in the metrics column too"
    assert origin_tag(unrecorded) == "Toy Shapes SAMPLE, 9 of 12, unrecorded folder"
    complete = {split: dict.fromkeys(("circle", "square"), PER_CLASS[split]) for split in SPLITS}
    official = record.model_copy(update={"kind": "official", "verified": True, "class_counts": complete})
    assert origin_tag(official) == "full Toy Shapes"
    assert origin_tag(official.model_copy(update={"verified": False})) == "full Toy Shapes, unverified"
