"""Copy a folder in d2l's hotdog layout (your own, or the mirror's stand-in) into the raw folder, unverified."""

import logging
import shutil
from pathlib import Path

from parabench.data.class_folders import scan_class_folders
from parabench.data.hotdog.problems import problem_report
from parabench.data.hotdog.sources import DATASET
from parabench.data.origin import record_origin
from parabench.errors import DataError
from parabench.io import staged_folder

logger = logging.getLogger("parabench.data")


def copy_class_folder(folder: Path, dest_dir: Path, *, detail: str, to_fix: str) -> None:
    """Check the folder's layout (every problem in one error, dest_dir untouched), then copy the files of its
    train/ and test/ class folders into a fresh dest_dir with origin.json (kind local, not verified), all at once.

    detail: what the folder is, for origin.json; to_fix: what to do when its layout is wrong.
    """
    scanned = scan_class_folders(folder)
    if scanned.problems:
        raise DataError(problem_report(folder, scanned.problems, to_fix))
    logger.warning("copying hotdog from %s without checksum verification", folder)
    with staged_folder(dest_dir) as staging:
        for split, by_class in scanned.files.items():
            for name, paths in by_class.items():
                (staging / split / name).mkdir(parents=True)
                for path in paths:
                    shutil.copyfile(path, staging / split / name / path.name)
        record_origin(staging, dataset=DATASET, kind="local", source=str(folder), verified=False, detail=detail)
