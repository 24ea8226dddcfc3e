"""Fashion-MNIST: get the four IDX files (download or local folder), then prepare them as .npy arrays."""

import logging
import shutil
from pathlib import Path

import numpy as np

from parabench.data.fetch import MIRROR_ENV, RemoteFile, fetch, mirror_root
from parabench.data.idx import read_idx
from parabench.data.origin import describe_origin, forget_origin, read_origin, record_origin
from parabench.errors import DataError
from parabench.io import atomic_path, write_atomic, write_json

MIRROR_FOLDER = "fashion-mnist"
IMAGE_SHAPE = (28, 28)
CLASS_NAMES = [
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
]  # fmt: skip
SPLITS = ("train", "test")
OFFICIAL_COUNTS = {"train": 60_000, "test": 10_000}
MAX_IDX_BYTES = sum(OFFICIAL_COUNTS.values()) * IMAGE_SHAPE[0] * IMAGE_SHAPE[1]  # no file holds more than all images
OFFICIAL_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
GITHUB_URL = "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/"

logger = logging.getLogger("parabench.data")


def _remote(name: str, sha256: str) -> RemoteFile:
    """A Fashion-MNIST file on the official server, with the GitHub copy as fallback."""
    return RemoteFile(name=name, urls=(OFFICIAL_URL + name, GITHUB_URL + name), sha256=sha256)


FILES: dict[str, RemoteFile] = {
    "train_images": _remote(
        "train-images-idx3-ubyte.gz", "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"
    ),
    "train_labels": _remote(
        "train-labels-idx1-ubyte.gz", "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"
    ),
    "test_images": _remote(
        "t10k-images-idx3-ubyte.gz", "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"
    ),
    "test_labels": _remote(
        "t10k-labels-idx1-ubyte.gz", "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"
    ),
}


def download(dest_dir: Path, source: str, *, files: dict[str, RemoteFile] = FILES) -> list[Path]:
    """Put the four files in dest_dir: fetched and verified when source is "download", else copied from a folder.

    Either way dest_dir/origin.json records where they came from.
    """
    forget_origin(dest_dir)
    if source == "download":
        root = mirror_root()
        mirror_dir = root / MIRROR_FOLDER if root is not None else None
        fetched = [
            fetch(remote, dest_dir, mirror_dir, hint=_mirror_hint(remote.name)) for remote in files.values()
        ]
        record_origin(
            dest_dir,
            dataset=MIRROR_FOLDER,
            kind="official",
            source=", ".join(dict.fromkeys(file.source for file in fetched)),
            verified=all(remote.sha256 is not None for remote in files.values()),
            detail="the four IDX files, each checked against its pinned sha256 (of the decompressed content)",
        )
        return [file.path for file in fetched]
    copied = _copy_local_folder(Path(source), dest_dir, files)
    record_origin(
        dest_dir,
        dataset=MIRROR_FOLDER,
        kind="local",
        source=source,
        verified=False,
        detail="a folder of the four IDX files, checked to be well-formed, copied without checksum verification",
    )
    return copied


def prepare(raw_dir: Path, out_dir: Path) -> None:
    """Validate the raw IDX files and write them as train/test image (uint8) and label (int64) .npy arrays."""
    paths = {role: _find_file(raw_dir, remote.name) for role, remote in FILES.items()}
    missing = [FILES[role].name for role, path in paths.items() if path is None]
    if missing:
        raise DataError(f"{raw_dir} lacks {', '.join(missing)}; run `dvc repro download@fashion_mnist` first")
    arrays = {role: read_idx(path, MAX_IDX_BYTES) for role, path in paths.items()}
    for split in SPLITS:
        _check_split(arrays, paths, split)
    for role, array in arrays.items():
        _save_npy(out_dir / f"{role}.npy", array if role.endswith("images") else array.astype(np.int64))
    counts = {split: len(arrays[f"{split}_labels"]) for split in SPLITS}
    meta = {
        "dataset": MIRROR_FOLDER,
        "counts": counts,
        "image_shape": list(IMAGE_SHAPE),
        "class_names": CLASS_NAMES,
        "data_origin": _data_origin(raw_dir, counts),
    }
    write_json(out_dir / "meta.json", meta)


def load_prepared(out_dir: Path) -> dict[str, np.ndarray]:
    """The four prepared arrays, keyed train_images, train_labels, test_images, test_labels."""
    paths = {role: out_dir / f"{role}.npy" for role in FILES}
    missing = [path.name for path in paths.values() if not path.is_file()]
    if missing:
        raise DataError(
            f"{out_dir} lacks the prepared Fashion-MNIST arrays ({', '.join(missing)}); "
            "run `dvc repro prepare@fashion_mnist` first"
        )
    return {role: np.load(path, allow_pickle=False) for role, path in paths.items()}


def _data_origin(raw_dir: Path, counts: dict[str, int]) -> str:
    """One sentence: the full set or a SAMPLE, its size, and where it came from (the raw folder's origin.json)."""
    total = sum(counts.values())
    split_sizes = ", ".join(f"{counts[split]:,} {split}" for split in SPLITS)
    if counts == OFFICIAL_COUNTS:
        size = f"the full Fashion-MNIST ({total:,} images: {split_sizes})"
    else:
        official_total = sum(OFFICIAL_COUNTS.values())
        size = f"Fashion-MNIST SAMPLE: {total:,} of the official {official_total:,} images ({split_sizes})"
    return f"{size}; {describe_origin(read_origin(raw_dir), raw_dir)}"


def _mirror_hint(name: str) -> str:
    """What to do when no source delivered `name`."""
    return (
        f"To fix: set {MIRROR_ENV} to a folder that holds {MIRROR_FOLDER}/{name} (see README), "
        "or point the params.yaml source to a local folder holding the four Fashion-MNIST files."
    )


def _copy_local_folder(folder: Path, dest_dir: Path, files: dict[str, RemoteFile]) -> list[Path]:
    """Check the folder holds four well-formed IDX files, then copy each atomically into dest_dir."""
    if not folder.is_dir():
        raise DataError(f"the Fashion-MNIST source folder {folder} does not exist (params.yaml source)")
    found = {role: _find_file(folder, remote.name) for role, remote in files.items()}
    missing = [files[role].name for role, path in found.items() if path is None]
    if missing:
        expected = ", ".join(f"{remote.name} (or {_plain_name(remote.name)})" for remote in files.values())
        raise DataError(f"{folder} lacks {', '.join(missing)}; it must hold: {expected}")
    bad = []
    for path in found.values():
        try:
            read_idx(path, MAX_IDX_BYTES)
        except DataError as error:
            bad.append(str(error))
    if bad:
        raise DataError(f"{folder} holds malformed Fashion-MNIST files:\n" + "\n".join(f"  - {line}" for line in bad))
    logger.warning("using the local files in %s without checksum verification (bring-your-own data)", folder)
    return [_copy_into(path, dest_dir) for path in found.values()]


def _copy_into(source: Path, dest_dir: Path) -> Path:
    """Copy one file atomically into dest_dir, removing a stale copy under its other (gzipped or plain) name."""
    dest = dest_dir / source.name
    other_name = _plain_name(source.name) if source.suffix == ".gz" else f"{source.name}.gz"
    (dest_dir / other_name).unlink(missing_ok=True)
    write_atomic(dest, lambda tmp: shutil.copyfile(source, tmp))
    return dest


def _find_file(folder: Path, gz_name: str) -> Path | None:
    """The file under its .gz name, else under its plain name, else None."""
    for candidate in (folder / gz_name, folder / _plain_name(gz_name)):
        if candidate.is_file():
            return candidate
    return None


def _plain_name(gz_name: str) -> str:
    """The name without its .gz suffix."""
    return gz_name.removesuffix(".gz")


def _check_split(arrays: dict[str, np.ndarray], paths: dict[str, Path], split: str) -> None:
    """Images are (N, 28, 28), labels are N values in 0..9."""
    images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
    images_path, labels_path = paths[f"{split}_images"], paths[f"{split}_labels"]
    if images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE:
        raise DataError(f"{images_path} holds images of shape {images.shape}; expected (N, 28, 28)")
    if labels.ndim != 1:
        raise DataError(f"{labels_path} holds labels of shape {labels.shape}; expected one dimension")
    if len(labels) != len(images):
        raise DataError(
            f"{labels_path} has {len(labels)} labels but {images_path} has {len(images)} images; they must match"
        )
    out_of_range = np.unique(labels[labels >= len(CLASS_NAMES)])
    if out_of_range.size:
        raise DataError(f"{labels_path} has labels outside 0..9: {out_of_range[:10].tolist()}")


def _save_npy(path: Path, array: np.ndarray) -> None:
    """np.save to exactly `path`, atomically."""
    with atomic_path(path) as tmp, tmp.open("wb") as stream:
        np.save(stream, array, allow_pickle=False)
