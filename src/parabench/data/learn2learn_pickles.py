"""learn2learn's miniImageNet pickles: a header check for a first download, and a reader that verifies each pickle's
sha256, unpickles it restricted, checks it is a dict of 84x84 uint8 images and a class index covering them, and
orders its rows by class."""

from pathlib import Path
from typing import Any

import numpy as np

from parabench.data.fetch import SHA256SUMS, RemoteFile, expected_sha256
from parabench.data.prepared import SplitArrays, split_by_class
from parabench.data.safe_pickle import load_restricted
from parabench.errors import DataError

IMAGE_SIZE = (84, 84)


def pickle_problem(path: Path) -> str | None:
    """Why a first, unpinned download is not a pickle (no protocol 2 to 5 header), or None (a content check)."""
    with path.open("rb") as stream:
        header = stream.read(2)
    if len(header) == 2 and header[0] == 0x80 and 2 <= header[1] <= 5:
        return None
    return "is not a pickle (it lacks a protocol 2 to 5 header; a web page in its place?)"


def read_pickles(raw_dir: Path, pickles: dict[str, RemoteFile]) -> tuple[dict[str, SplitArrays], list[str]]:
    """Each split's pickle verified against the sha256 pinned or recorded at download, unpickled restricted, checked,
    its rows ordered by (class, index) and transposed to N x 3 x 84 x 84; and every problem found (a split with a
    problem is left out)."""
    problems: list[str] = []
    splits: dict[str, SplitArrays] = {}
    for split, remote in pickles.items():
        path = raw_dir / remote.name
        expected = expected_sha256(remote, raw_dir)
        if not path.is_file():
            problems.append(f"{path} is missing")
            continue
        if expected is None:
            problems.append(
                f"{path} has no checksum recorded in {raw_dir / SHA256SUMS}, so it is not unpickled; "
                "run the download stage to fetch and record it"
            )
            continue
        try:
            data = load_restricted(path, expected)
        except DataError as error:
            problems.append(str(error))
            continue
        content_problems = pickle_content_problems(path, data)
        problems += content_problems
        if not content_problems:
            splits[split] = _ordered_split(data["image_data"], data["class_dict"])
    return splits, problems


def pickle_content_problems(path: Path, data: Any) -> list[str]:
    """What is wrong with an unpickled learn2learn dict: its keys, image array, or class index lists."""
    if not isinstance(data, dict) or not {"image_data", "class_dict"} <= data.keys():
        return [f"{path} is not a dict with image_data and class_dict"]
    images, class_dict = data["image_data"], data["class_dict"]
    expected_shape = (*IMAGE_SIZE, 3)
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.shape[1:] != expected_shape:
        described = f"{images.dtype} {images.shape}" if isinstance(images, np.ndarray) else type(images).__name__
        return [f"{path}: image_data is {described}; expected uint8 (N, 84, 84, 3)"]
    if len(images) == 0:
        return [f"{path}: image_data holds no images"]
    if not isinstance(class_dict, dict) or not all(
        isinstance(wnid, str) and _is_index_list(indices) for wnid, indices in class_dict.items()
    ):
        return [f"{path}: class_dict is not a dict of wnid to a list of row indices"]
    listed = np.concatenate([np.asarray(indices, dtype=np.int64) for indices in class_dict.values()])
    if listed.size != len(images) or not np.array_equal(np.sort(listed), np.arange(len(images))):
        return [
            f"{path}: class_dict lists {listed.size} row indices for {len(images)} images; "
            "each image must be listed exactly once, with an index in 0..N-1"
        ]
    return []


def _is_index_list(indices: Any) -> bool:
    """Whether a class_dict value is a flat list (or integer array) of row indices."""
    if isinstance(indices, np.ndarray):
        return indices.ndim == 1 and indices.dtype.kind in "iu"
    return isinstance(indices, list) and all(isinstance(index, int | np.integer) for index in indices)


def _ordered_split(image_data: np.ndarray, class_dict: dict[str, list[int]]) -> SplitArrays:
    """Rows ordered by (wnid, index), transposed from N x H x W x C to N x C x H x W."""
    wnids = sorted(class_dict)
    order = np.concatenate([np.sort(np.asarray(class_dict[wnid], dtype=np.int64)) for wnid in wnids])
    images = np.ascontiguousarray(image_data[order].transpose(0, 3, 1, 2))
    return split_by_class(images, [wnid for wnid in wnids for _ in class_dict[wnid]])
