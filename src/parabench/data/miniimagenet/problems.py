"""Problems prepare finds in either layout, reported together in one message."""

from pathlib import Path

from parabench.data.problem_list import listed_problems


def classes_in_two_splits(wnids_by_split: dict[str, set[str]]) -> list[str]:
    """A problem for each class found in more than one split."""
    splits_of: dict[str, list[str]] = {}
    for split, wnids in wnids_by_split.items():
        for wnid in wnids:
            splits_of.setdefault(wnid, []).append(split)
    return [
        f"class {wnid} is in more than one split ({', '.join(splits)}); each class must belong to one split"
        for wnid, splits in sorted(splits_of.items())
        if len(splits) > 1
    ]


def problem_report(folder: Path, problems: list[str]) -> str:
    """One message listing the problems (the first hundred, then a count) and what to do."""
    return (
        f"miniImageNet in {folder} has {len(problems)} problem(s):\n{listed_problems(problems)}\n"
        "To fix: repair the source folder (params.yaml data.miniimagenet.source) or set source: download, "
        "then run `dvc repro download@miniimagenet prepare@miniimagenet`."
    )
