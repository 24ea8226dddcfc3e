"""Scan an image folder laid out as <split>/<class>/<files> (e.g. train/ and test/), and name every layout problem."""

from dataclasses import dataclass
from pathlib import Path


def class_folder_layout(splits: tuple[str, ...]) -> str:
    """The layout in words, for messages."""
    folders = " and ".join(f"{split}/<class>/<image files>" for split in splits)
    return (
        f"{folders}: the same class folders in every split, each holding at least one image file (any format "
        "Pillow reads), and nothing else in the split folders"
    )


@dataclass(frozen=True)
class ClassFolders:
    """The files of each split by class: classes sorted by name (as torchvision's ImageFolder does), files sorted.

    splits: in order; classes: every class found in any split; files[split][class]: that class folder's files (empty
    when it is missing from the split). problems: each layout problem found, naming its file or folder (empty: a
    good layout).
    """

    splits: tuple[str, ...]
    classes: tuple[str, ...]
    files: dict[str, dict[str, tuple[Path, ...]]]
    problems: tuple[str, ...]

    def paths(self) -> list[Path]:
        """Every file, split by split, class by class in the order of `classes`."""
        return [path for split in self.splits for name in self.classes for path in self.files[split][name]]

    def labels(self, split: str) -> list[int]:
        """The index in `classes` of each file of the split, in the order of paths()."""
        return [label for label, name in enumerate(self.classes) for _ in self.files[split][name]]


def scan_class_folders(folder: Path, splits: tuple[str, ...]) -> ClassFolders:
    """List the folder's files per split and class, skipping hidden names (starting with '.'), and collect ALL
    layout problems: a split folder missing, a split without class folders, an empty class folder, a class in
    one split only, and anything but class folders in a split or files in a class folder."""
    if not folder.is_dir():
        missing = f"{folder} does not exist or is not a folder"
        return ClassFolders(splits, (), {split: {} for split in splits}, (missing,))
    problems: list[str] = []
    files = {split: _scan_split(folder / split, problems) for split in splits}
    classes = tuple(sorted({name for by_class in files.values() for name in by_class}))
    every_split = "both splits" if len(splits) == 2 else "every split"
    for name in classes:
        present = ", ".join(f"{split}/" for split in splits if name in files[split])
        problems += [
            f"class {name!r} is in {present} but {folder / split / name} is missing; every class needs a folder "
            f"in {every_split}"
            for split in splits
            if name not in files[split] and files[split]
        ]
    listing = {split: {name: by_class.get(name, ()) for name in classes} for split, by_class in files.items()}
    return ClassFolders(splits, classes, listing, tuple(problems))


def _scan_split(split_dir: Path, problems: list[str]) -> dict[str, tuple[Path, ...]]:
    """The split's class folders and their sorted files; what is wrong with it is added to problems."""
    if not split_dir.is_dir():
        problems.append(f"{split_dir} is missing; the folder must hold the split folder {split_dir.name}/")
        return {}
    by_class: dict[str, tuple[Path, ...]] = {}
    for entry in _visible(split_dir):
        if not entry.is_dir():
            problems.append(f"{entry} is a file directly inside {split_dir.name}/, which must hold only class folders")
            continue
        entries = _visible(entry)
        problems += [
            f"{nested} is a folder inside a class folder, which must hold only image files"
            for nested in entries
            if nested.is_dir()
        ]
        by_class[entry.name] = tuple(path for path in entries if not path.is_dir())
        if not by_class[entry.name]:
            problems.append(f"{entry} is an empty class folder; it must hold at least one image file")
    if not by_class:
        problems.append(f"{split_dir} holds no class folders; it must hold one folder of image files per class")
    return by_class


def _visible(folder: Path) -> list[Path]:
    """The folder's entries whose names do not start with '.', sorted by name."""
    return sorted((path for path in folder.iterdir() if not path.name.startswith(".")), key=lambda path: path.name)
