"""Problems found in a hotdog image folder, reported together in one message that says what to do."""

from collections.abc import Sequence
from pathlib import Path

from parabench.data.class_folders import LAYOUT
from parabench.data.problem_list import listed_problems


def problem_report(folder: Path, problems: Sequence[str], to_fix: str) -> str:
    """One message naming the folder, listing its problems (the first hundred, then a count), the layout it
    must have, and what to do."""
    return (
        f"the hotdog image folder {folder} has {len(problems)} problem(s):\n{listed_problems(problems)}\n"
        f"It must hold {LAYOUT}.\nTo fix: {to_fix}"
    )
