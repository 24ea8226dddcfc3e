"""Check that an unpickled learn2learn split is a dict of 84x84 uint8 images and a class index covering them."""

from pathlib import Path
from typing import Any

import numpy as np

from parabench.data.miniimagenet.sources import IMAGE_SIZE


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
