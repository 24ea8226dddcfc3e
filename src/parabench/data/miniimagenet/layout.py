"""Which of the two layouts a folder holds, and what it lacks to hold one."""

from pathlib import Path

from parabench.data.miniimagenet import sources
from parabench.data.miniimagenet.content_checks import pickle_problem
from parabench.data.miniimagenet.sources import IMAGES_DIR, Layout
from parabench.errors import DataError


def layout_problems(folder: Path, layout: Layout) -> list[str]:
    """What the folder lacks to hold the layout: images/ and the split CSVs, or the three pickles (as pickles)."""
    if layout == "images":
        lacks = [] if (folder / IMAGES_DIR).is_dir() else [f"{IMAGES_DIR}/ (a folder of the images)"]
        return lacks + [remote.name for remote in sources.SPLIT_CSVS.values() if not (folder / remote.name).is_file()]
    problems = []
    for remote in sources.PICKLES.values():
        path = folder / remote.name
        problem = pickle_problem(path) if path.is_file() else None
        if not path.is_file() or problem:
            problems.append(f"{remote.name} ({problem})" if problem else remote.name)
    return problems


def detect_layout(folder: Path, preferred: Layout) -> Layout:
    """The layout the folder holds (the preferred one when it holds both), or one error saying what it lacks."""
    if not folder.is_dir():
        raise DataError(
            f"the miniImageNet source folder {folder} does not exist (params.yaml data.miniimagenet.source); "
            "set it to an existing folder or to download"
        )
    other: Layout = "pickles" if preferred == "images" else "images"
    problems = {layout: layout_problems(folder, layout) for layout in (preferred, other)}
    complete = [layout for layout, lacks in problems.items() if not lacks]
    if complete:
        return complete[0]
    lacks = "; ".join(f"for the {layout} layout it lacks {', '.join(names)}" for layout, names in problems.items())
    raise DataError(
        f"{folder} holds miniImageNet in neither layout: {lacks}. It must hold either images/ with train.csv, "
        "val.csv and test.csv (columns filename,label), or learn2learn's "
        f"{', '.join(remote.name for remote in sources.PICKLES.values())}. To fix: complete the folder, or set "
        "params.yaml data.miniimagenet.source to another folder or to download."
    )


def layout_of_raw(raw_dir: Path) -> Layout:
    """images when the raw folder has images/, else pickles when it has one of them; prepare checks the rest."""
    if (raw_dir / IMAGES_DIR).is_dir():
        return "images"
    if any((raw_dir / remote.name).is_file() for remote in sources.PICKLES.values()):
        return "pickles"
    raise DataError(
        f"{raw_dir} holds miniImageNet in neither layout (images/ with train.csv, val.csv, test.csv; or "
        f"{', '.join(remote.name for remote in sources.PICKLES.values())}); run `dvc repro download@miniimagenet` first"
    )
