"""Fashion-MNIST: the four published IDX files (or a folder of them), prepared as grey 1 x 28 x 28 arrays."""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parabench.data.dataset import Dataset, Decoded
from parabench.data.fetch import RemoteFile
from parabench.data.idx import read_idx
from parabench.data.prepared import SplitArrays
from parabench.data.source import DataSource
from parabench.errors import DataError

IMAGE_SHAPE = (28, 28)
CLASS_NAMES = (
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
)  # fmt: skip
MAX_IDX_BYTES = 70_000 * IMAGE_SHAPE[0] * IMAGE_SHAPE[1]  # no file holds more than all the official images
OFFICIAL_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
GITHUB_URL = "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/"


def _remote(name: str, sha256: str) -> RemoteFile:
    """A Fashion-MNIST file on the official server, with the GitHub copy as fallback; pinned by the sha256 of its
    decompressed content."""
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


@dataclass(frozen=True, kw_only=True)
class FashionMnist(Dataset[DataSource]):
    """The IDX files by role ({split}_images, {split}_labels), each under its .gz name or its plain name."""

    files: dict[str, RemoteFile]
    class_names: tuple[str, ...]

    @property
    def resources(self) -> tuple[RemoteFile, ...]:
        return tuple(self.files.values())

    @property
    def folder_layout(self) -> str:
        names = ", ".join(f"{remote.name} (or {_plain_name(remote.name)})" for remote in self.files.values())
        return f"the four IDX files: {names}"

    def local_files(self, folder: Path, section: DataSource, to_fix: str) -> list[Path]:
        """The four files, each present and a well-formed IDX file."""
        found, problems = self._find_files(folder)
        for path in found.values():
            try:
                read_idx(path, MAX_IDX_BYTES)
            except DataError as error:
                problems.append(str(error))
        if problems:
            raise DataError(self.problem_report(folder, problems, to_fix))
        return list(found.values())

    def read(self, raw_dir: Path) -> Decoded:
        """Each split's images (N x 28 x 28, given one channel) and labels (N values in 0..9)."""
        found, problems = self._find_files(raw_dir)
        arrays = {}
        for role, path in found.items():
            try:
                arrays[role] = read_idx(path, MAX_IDX_BYTES)
            except DataError as error:
                problems.append(str(error))
        for split in self.splits:
            if f"{split}_images" in arrays and f"{split}_labels" in arrays:
                problems += self._split_problems(arrays, found, split)
        if problems:
            raise DataError(self.problem_report(raw_dir, problems, self.prepare_fix))
        splits = {
            split: SplitArrays(
                arrays[f"{split}_images"][:, np.newaxis], arrays[f"{split}_labels"].astype(np.int64), self.class_names
            )
            for split in self.splits
        }
        return Decoded(splits, "idx")

    def _find_files(self, folder: Path) -> tuple[dict[str, Path], list[str]]:
        """Each file by role, under its .gz name or else its plain name; a problem for each one missing."""
        found, problems = {}, []
        for role, remote in self.files.items():
            candidates = [folder / remote.name, folder / _plain_name(remote.name)]
            present = [path for path in candidates if path.is_file()]
            if present:
                found[role] = present[0]
            else:
                problems.append(f"{candidates[0]} is missing (and so is {candidates[1].name})")
        return found, problems

    def _split_problems(self, arrays: dict[str, np.ndarray], paths: dict[str, Path], split: str) -> list[str]:
        """Images are (N, 28, 28), labels are N values that index the classes."""
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        images_path, labels_path = paths[f"{split}_images"], paths[f"{split}_labels"]
        problems = []
        if images.ndim != 3 or images.shape[1:] != IMAGE_SHAPE:
            problems.append(f"{images_path} holds images of shape {images.shape}; expected (N, 28, 28)")
        if labels.ndim != 1:
            problems.append(f"{labels_path} holds labels of shape {labels.shape}; expected one dimension")
        elif len(labels) != len(images):
            problems.append(
                f"{labels_path} has {len(labels)} labels but {images_path} has {len(images)} images; they must match"
            )
        out_of_range = np.unique(labels[labels >= len(self.class_names)])
        if out_of_range.size:
            top = len(self.class_names) - 1
            problems.append(f"{labels_path} has labels outside 0..{top}: {out_of_range[:10].tolist()}")
        return problems


def _plain_name(gz_name: str) -> str:
    """The name without its .gz suffix."""
    return gz_name.removesuffix(".gz")


FASHION_MNIST = FashionMnist(
    name="fashion_mnist",
    title="Fashion-MNIST",
    splits=("train", "test"),
    mirror_folder="fashion-mnist",
    image_shape=(1, *IMAGE_SHAPE),
    official_classes={"train": 10, "test": 10},  # 60,000 training and 10,000 test images, as many of each class
    official_images_per_class={"train": 6000, "test": 1000},
    resize="none: the published 28 x 28 grey images, given one channel",
    local_detail="a folder of the four IDX files, checked to be well-formed, copied without checksum verification",
    files=FILES,
    class_names=CLASS_NAMES,
)
