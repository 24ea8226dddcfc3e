"""Copy a local or mirror folder's miniImageNet files into the raw folder, unverified, all at once."""

import logging
import shutil
from pathlib import Path

from parabench.data.fetch import record_sha256
from parabench.data.miniimagenet import sources
from parabench.data.miniimagenet.sources import DATASET, IMAGES_DIR, Layout
from parabench.data.origin import OriginKind, record_origin
from parabench.data.safe_pickle import file_sha256
from parabench.io import staged_folder

logger = logging.getLogger("parabench.data")


def copy_folder(folder: Path, dest_dir: Path, layout: Layout, *, kind: OriginKind) -> None:
    """Copy the layout's files from the folder into a fresh dest_dir, with origin.json, all at once."""
    logger.warning("copying miniImageNet (%s layout) from %s without checksum verification", layout, folder)
    with staged_folder(dest_dir) as staging:
        if layout == "images":
            shutil.copytree(folder / IMAGES_DIR, staging / IMAGES_DIR, copy_function=shutil.copyfile)
            for remote in sources.SPLIT_CSVS.values():
                shutil.copyfile(folder / remote.name, staging / remote.name)
        else:  # the copies' sha256 go in SHA256SUMS, for prepare to verify before unpickling
            for remote in sources.PICKLES.values():
                shutil.copyfile(folder / remote.name, staging / remote.name)
                record_sha256(staging, remote.name, file_sha256(staging / remote.name))
        described = "a sample in the documented layout" if kind == "sample" else f"a folder in the {layout} layout"
        record_origin(
            staging,
            dataset=DATASET,
            kind=kind,
            source=str(folder),
            verified=False,
            detail=f"{described}, copied without checksum verification",
        )
