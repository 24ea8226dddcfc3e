"""A dataset of image class folders, <split>/<class>/<image files>, published as one zip of them: declare its
attributes and its archive, and the lifecycle runs (see tests/test_dataset_lifecycle.py for a toy one).

Every image is decoded to RGB and squashed to image_shape's height x width (aspect ratio not kept; Pillow's
bilinear filter, see images.py), so that one fixed size stacks every image of a split into one uint8 array.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from parabench.data.archive import unpack_zip
from parabench.data.class_folders import class_folder_layout, scan_class_folders
from parabench.data.dataset import Dataset, Decoded
from parabench.data.fetch import RemoteFile
from parabench.data.images import decode_images
from parabench.data.prepared import SplitArrays
from parabench.data.source import DataSource
from parabench.errors import DataError

LAYOUT_NAME = "class folders"


@dataclass(frozen=True, kw_only=True)
class ClassFolderDataset(Dataset[DataSource]):
    """Class folders per split, from a local folder, a mirror stand-in folder, or the published zip (whose files may
    lie under one top folder); classes sorted by name, as torchvision's ImageFolder sorts them."""

    archive: RemoteFile
    resize: str = (
        "each image squashed to the prepared height x width (aspect ratio not kept) with Pillow's bilinear filter, "
        "antialiased when shrinking"
    )

    @property
    def resources(self) -> tuple[RemoteFile, ...]:
        return (self.archive,)

    @property
    def folder_layout(self) -> str:
        return class_folder_layout(self.splits)

    def local_files(self, folder: Path, section: DataSource, to_fix: str) -> list[Path]:
        scanned = scan_class_folders(folder, self.splits)
        if scanned.problems:
            raise DataError(self.problem_report(folder, scanned.problems, to_fix))
        return scanned.paths()

    def unpack(self, raw_dir: Path, section: DataSource) -> None:
        unpack_zip(raw_dir / self.archive.name, raw_dir, strip_top_folder=True)

    def holds_stand_in(self, mirror_dir: Path, section: DataSource) -> bool:
        """The mirror folder lacks the archive but holds the split folders."""
        has_splits = all((mirror_dir / split).is_dir() for split in self.splits)
        return has_splits and not (mirror_dir / self.archive.name).is_file()

    def read(self, raw_dir: Path) -> Decoded:
        """Decode every image once (in parallel), split by split, class by class; labels index the sorted classes."""
        scanned = scan_class_folders(raw_dir, self.splits)
        channels, height, width = self.image_shape
        assert channels == 3, "images decode to RGB"
        images, undecodable = decode_images(scanned.paths(), (height, width))
        problems = [*scanned.problems, *undecodable]
        if problems:
            raise DataError(self.problem_report(raw_dir, problems, self.prepare_fix))
        splits, start = {}, 0
        for split in self.splits:
            labels = np.array(scanned.labels(split), dtype=np.int64)
            splits[split] = SplitArrays(images[start : start + len(labels)], labels, scanned.classes)
            start += len(labels)
        return Decoded(splits, LAYOUT_NAME)
