"""miniImageNet (Ravi & Larochelle's split), in either public layout, decoded once into 84 x 84 arrays.

"images": the seed's images.zip (84x84-and-larger ImageNet crops named <wnid><8 digits>.jpg; the class is the
9-character wnid prefix) with the split files train.csv, val.csv, test.csv (filename,label). "pickles":
learn2learn's mini-imagenet-cache-{train,validation,test}.pkl, each a dict with image_data (N x 84 x 84 x 3 uint8)
and class_dict ({wnid: [row indices]}). Both prepare to the same arrays: rows ordered by (class, name or index).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from parabench.data.archive import unpack_zip, zip_problem
from parabench.data.dataset import Dataset, Decoded, Phrases
from parabench.data.fetch import RemoteFile
from parabench.data.images import decode_images
from parabench.data.learn2learn_pickles import IMAGE_SIZE, pickle_problem, read_pickles
from parabench.data.prepared import SplitArrays, split_by_class
from parabench.data.provenance import Provenance
from parabench.data.safe_pickle import file_sha256
from parabench.data.source import DataSource
from parabench.data.split_csv import IMAGES_DIR, files_in_two_splits, read_split_csv
from parabench.errors import DataError

Layout = Literal["images", "pickles"]
SPLITS = ("train", "val", "test")

SPLIT_CSV_URL = "https://raw.githubusercontent.com/twitter/meta-learning-lstm/master/data/miniImagenet/"
# Ravi & Larochelle publish the split files in their repository; their md5 (as in the usual loaders) are
# train 9525e1538f67719f18f1936bf8d0782d, val ce315ce99b41fbf84fa6acd69315d918, test 5b89df877c6cbe5d291e43118a2a9591.
# The sha256 pinned here were computed from byte-identical copies whose md5 match those.
SPLIT_CSVS = {
    "train": RemoteFile(
        "train.csv", (SPLIT_CSV_URL + "train.csv",), "498519cd8e49ce97ed26a4a3638966698ae41ab35e9c68538319fc9b46ba7d2f"
    ),
    "val": RemoteFile(
        "val.csv", (SPLIT_CSV_URL + "val.csv",), "5658a59921ca027ee76af92949869c5d6f41d77592ff3b18db325a9d10c893b9"
    ),
    "test": RemoteFile(
        "test.csv", (SPLIT_CSV_URL + "test.csv",), "2b7cfa78342995761a572a8158e539bc4e0a80f9bbd7d00c1e17a460fbbb93fa"
    ),
}
# images.zip: the 60,000 images, shared by Ravi & Larochelle on Google Drive (file id 0B3Irx3uQNoBMQ1FlNXJsZUdYWEE).
# No checksum is published for it, and it could not be downloaded where this was written to compute one, so it
# is unpinned: the first copy is trusted and its sha256 recorded in SHA256SUMS (trust on first use, see fetch.py).
IMAGES_ZIP = RemoteFile(
    "images.zip",
    ("https://drive.usercontent.google.com/download?id=0B3Irx3uQNoBMQ1FlNXJsZUdYWEE&export=download&confirm=t",),
    sha256=None,
    content_check=zip_problem,
)
# learn2learn's pickles (its mini_imagenet.py): Zenodo first, its Dropbox links as fallback. No checksum is
# published for them: unpinned, trusted on first use like images.zip, and only ever unpickled restricted.
PICKLE_SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}
DROPBOX_URLS = {
    "train": "https://www.dropbox.com/s/9g8c6w345s2ek03/mini-imagenet-cache-train.pkl?dl=1",
    "val": "https://www.dropbox.com/s/ip1b7se3gij3r1b/mini-imagenet-cache-validation.pkl?dl=1",
    "test": "https://www.dropbox.com/s/ye9jeb5tyz0x01b/mini-imagenet-cache-test.pkl?dl=1",
}
PICKLES = {
    split: RemoteFile(
        f"mini-imagenet-cache-{name}.pkl",
        (f"https://zenodo.org/record/7978538/files/mini-imagenet-cache-{name}.pkl", DROPBOX_URLS[split]),
        sha256=None,
        content_check=pickle_problem,
    )
    for split, name in PICKLE_SPLIT_NAMES.items()
}


class MiniImagenetSource(DataSource):
    """params.yaml `data.miniimagenet`: where miniImageNet comes from, and which public layout to download.

    source: "download" (the official files; $PARABENCH_DATA_MIRROR/miniimagenet first) or a local folder, whose
    layout is detected (layout only breaks the tie when it holds both).
    layout: "images" (images.zip and the split CSVs) or "pickles" (learn2learn's 84x84 pickles).
    """

    layout: Layout


@dataclass(frozen=True, kw_only=True)
class MiniImagenet(Dataset[MiniImagenetSource]):
    """The split CSVs and images.zip (images layout) and learn2learn's pickles (pickles layout), by split."""

    split_csvs: dict[str, RemoteFile]
    images_zip: RemoteFile
    pickles: dict[str, RemoteFile]

    @property
    def resources(self) -> tuple[RemoteFile, ...]:
        return (*self.split_csvs.values(), self.images_zip, *self.pickles.values())

    @property
    def folder_layout(self) -> str:
        return (
            f"either {IMAGES_DIR}/ with train.csv, val.csv and test.csv (columns filename,label), or learn2learn's "
            f"{', '.join(remote.name for remote in self.pickles.values())}"
        )

    def official_files(self, section: MiniImagenetSource) -> tuple[RemoteFile, ...]:
        """The published files of the chosen layout."""
        return self._layout_files(section.layout)

    def unpack(self, raw_dir: Path, section: MiniImagenetSource) -> None:
        if section.layout == "images":
            unpack_zip(raw_dir / self.images_zip.name, raw_dir / IMAGES_DIR, strip_top_folder=True)

    def holds_stand_in(self, mirror_dir: Path, section: MiniImagenetSource) -> bool:
        """The mirror folder lacks the layout's published files but holds a sample: images/ and the three CSVs."""
        holds_published = all((mirror_dir / remote.name).is_file() for remote in self.official_files(section))
        return not holds_published and not self._layout_problems(mirror_dir, "images")

    def local_files(self, folder: Path, section: MiniImagenetSource, to_fix: str) -> list[Path]:
        """The files of the layout the folder holds (the section's when it holds both), or one error saying what it
        lacks for each."""
        other: Layout = "pickles" if section.layout == "images" else "images"
        problems = {layout: self._layout_problems(folder, layout) for layout in (section.layout, other)}
        complete = [layout for layout, lacks in problems.items() if not lacks]
        if not complete:
            lacks = "; ".join(
                f"for the {layout} layout it lacks {', '.join(names)}" for layout, names in problems.items()
            )
            raise DataError(
                f"{folder} holds miniImageNet in neither layout: {lacks}. It must hold {self.folder_layout}. "
                f"To fix: {to_fix}"
            )
        if complete[0] == "pickles":
            return [folder / remote.name for remote in self.pickles.values()]
        images = sorted(path for path in (folder / IMAGES_DIR).rglob("*") if path.is_file())
        return images + [folder / remote.name for remote in self.split_csvs.values()]

    def read(self, raw_dir: Path) -> Decoded:
        """Either layout into arrays; every problem of either, a class in two splits included, in one error."""
        if (raw_dir / IMAGES_DIR).is_dir():
            layout, (splits, problems) = "images", self._read_image_folder(raw_dir)
        elif any((raw_dir / remote.name).is_file() for remote in self.pickles.values()):
            layout, (splits, problems) = "pickles", read_pickles(raw_dir, self.pickles)
        else:
            raise DataError(
                f"{raw_dir} holds miniImageNet in neither layout ({self.folder_layout}); run "
                f"`dvc repro download@{self.name}` first"
            )
        problems += _classes_in_two_splits({split: set(arrays.classes) for split, arrays in splits.items()})
        if problems:
            raise DataError(self.problem_report(raw_dir, problems, self.prepare_fix))
        official_split_files = None
        if layout == "images":
            official_split_files = all(
                file_sha256(raw_dir / remote.name) == remote.sha256 for remote in self.split_csvs.values()
            )
        return Decoded(splits, layout, official_split_files)

    def describe(self, provenance: Provenance) -> Phrases:
        """The full set or a SAMPLE, with its classes and images per class, and whether the split files are the
        published ones."""
        found = provenance.class_counts
        classes = "/".join(str(len(found[split])) for split in self.splits)
        per_class = [count for split in self.splits for count in found[split].values()]
        total = sum(per_class)
        if provenance.complete:
            per_official_class = provenance.official_images_per_class[self.splits[0]]
            phrases = [("the full miniImageNet", f"{total:,} images, {classes} classes x {per_official_class}")]
        else:
            low, high = min(per_class, default=0), max(per_class, default=0)
            per_class_text = str(low) if low == high else f"{low} to {high}"
            official = sum(provenance.official_counts.values())
            phrases = [
                (
                    f"miniImageNet SAMPLE: {total:,} of the official {official:,} images",
                    f"{classes} classes, {per_class_text} per class",
                )
            ]
        if provenance.official_split_files is True:
            phrases.append((", the official split files", ""))
        elif provenance.official_split_files is False:
            phrases.append(
                (
                    ", split files other than the official ones"
                    if provenance.complete
                    else ", split files cut to match",
                    "",
                )
            )
        return tuple(phrases)

    def _layout_files(self, layout: Layout) -> tuple[RemoteFile, ...]:
        """The published files of a layout."""
        if layout == "images":
            return (*self.split_csvs.values(), self.images_zip)
        return tuple(self.pickles.values())

    def _layout_problems(self, folder: Path, layout: Layout) -> list[str]:
        """What the folder lacks to hold the layout: images/ and the split CSVs, or the three pickles (as pickles)."""
        if layout == "images":
            lacks = [] if (folder / IMAGES_DIR).is_dir() else [f"{IMAGES_DIR}/ (a folder of the images)"]
            return lacks + [remote.name for remote in self.split_csvs.values() if not (folder / remote.name).is_file()]
        problems = []
        for remote in self.pickles.values():
            path = folder / remote.name
            problem = pickle_problem(path) if path.is_file() else None
            if not path.is_file() or problem:
                problems.append(f"{remote.name} ({problem})" if problem else remote.name)
        return problems

    def _read_image_folder(self, raw_dir: Path) -> tuple[dict[str, SplitArrays], list[str]]:
        """The split CSVs checked against images/, and every listed image decoded once (in parallel), rows ordered
        by (class, file name); and every problem found."""
        problems: list[str] = []
        rows = {split: read_split_csv(raw_dir / self.split_csvs[split].name, problems) for split in self.splits}
        problems += files_in_two_splits(rows)
        images_dir = raw_dir / IMAGES_DIR
        present: dict[str, list[tuple[str, str]]] = {}
        for split, split_rows in rows.items():
            present[split] = sorted(
                (row for row in split_rows if (images_dir / row[0]).is_file()), key=lambda row: (row[1], row[0])
            )
            problems += [
                f"{images_dir / name} is missing (listed in {split}.csv)"
                for name, _ in sorted(set(split_rows) - set(present[split]))
            ]
        paths = [images_dir / name for split in self.splits for name, _ in present[split]]
        images, decode_problems = decode_images(paths, IMAGE_SIZE)
        splits, start = {}, 0
        for split in self.splits:
            stop = start + len(present[split])
            splits[split] = split_by_class(images[start:stop], [label for _, label in present[split]])
            start = stop
        return splits, problems + decode_problems


def _classes_in_two_splits(classes_by_split: dict[str, set[str]]) -> list[str]:
    """A problem for each class found in more than one split."""
    splits_of: dict[str, list[str]] = {}
    for split, classes in classes_by_split.items():
        for name in classes:
            splits_of.setdefault(name, []).append(split)
    return [
        f"class {name} is in more than one split ({', '.join(splits)}); each class must belong to one split"
        for name, splits in sorted(splits_of.items())
        if len(splits) > 1
    ]


MINIIMAGENET = MiniImagenet(
    name="miniimagenet",
    title="miniImageNet",
    splits=SPLITS,
    mirror_folder="miniimagenet",
    image_shape=(3, *IMAGE_SIZE),
    official_classes={"train": 64, "val": 16, "test": 20},
    official_images_per_class={"train": 600, "val": 600, "test": 600},
    source_model=MiniImagenetSource,
    resize=(
        "images layout: each image converted to RGB and resized to 84 x 84 with Pillow's bilinear filter, "
        "antialiased when shrinking; pickles layout: as published (84 x 84 RGB)"
    ),
    local_detail="a folder in the images or pickles layout, copied without checksum verification",
    stand_in_kind="sample",
    stand_in_detail="a sample in the documented layout, copied without checksum verification",
    split_csvs=SPLIT_CSVS,
    images_zip=IMAGES_ZIP,
    pickles=PICKLES,
)
