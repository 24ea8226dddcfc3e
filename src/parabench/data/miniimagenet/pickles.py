"""Prepare the pickles layout: verify each pickle's sha256, unpickle it restricted, check it, order its rows."""

from pathlib import Path

import numpy as np

from parabench.data.fetch import SHA256SUMS, expected_sha256
from parabench.data.miniimagenet import sources
from parabench.data.miniimagenet.pickle_checks import pickle_content_problems
from parabench.data.miniimagenet.prepared_split import PreparedSplit, split_by_class
from parabench.data.miniimagenet.problems import classes_in_two_splits, problem_report
from parabench.data.miniimagenet.sources import SPLITS
from parabench.data.safe_pickle import load_restricted
from parabench.errors import DataError


def read_pickles(raw_dir: Path) -> dict[str, PreparedSplit]:
    """Verify and unpickle (restricted) each split's pickle, check it, and order its rows by (class, index)."""
    problems: list[str] = []
    contents: dict[str, tuple[np.ndarray, dict[str, list[int]]]] = {}
    for split, remote in sources.PICKLES.items():
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
            contents[split] = (data["image_data"], data["class_dict"])
    problems += classes_in_two_splits({split: set(class_dict) for split, (_, class_dict) in contents.items()})
    if problems:
        raise DataError(problem_report(raw_dir, problems))
    return {split: _pickle_split(*contents[split]) for split in SPLITS}


def _pickle_split(image_data: np.ndarray, class_dict: dict[str, list[int]]) -> PreparedSplit:
    """Rows ordered by (wnid, index), transposed from N x H x W x C to N x C x H x W."""
    wnids = sorted(class_dict)
    order = np.concatenate([np.sort(np.asarray(class_dict[wnid], dtype=np.int64)) for wnid in wnids])
    images = np.ascontiguousarray(image_data[order].transpose(0, 3, 1, 2))
    return split_by_class(images, [wnid for wnid in wnids for _ in class_dict[wnid]])
