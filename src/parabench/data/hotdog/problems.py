"""Problems found in a hotdog image folder, reported together in one message that says what to do."""

from collections.abc import Sequence
from pathlib import Path

from parabench.data.class_folders import LAYOUT

MAX_LISTED_PROBLEMS = 100


def problem_report(folder: Path, problems: Sequence[str], to_fix: str) -> str:
    """One message naming the folder, listing its problems (the first MAX_LISTED_PROBLEMS, then a count), the
    layout it must have, and what to do."""
    listed = "\n".join(f"  - {problem}" for problem in problems[:MAX_LISTED_PROBLEMS])
    more = len(problems) - MAX_LISTED_PROBLEMS
    if more > 0:
        listed += f"\n  ... and {more} more"
    return (
        f"the hotdog image folder {folder} has {len(problems)} problem(s):\n{listed}\n"
        f"It must hold {LAYOUT}.\nTo fix: {to_fix}"
    )
