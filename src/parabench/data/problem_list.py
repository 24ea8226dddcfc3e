"""Many problems found in a dataset, listed for one error message: the first hundred, then how many more."""

from collections.abc import Sequence

MAX_LISTED_PROBLEMS = 100


def listed_problems(problems: Sequence[str]) -> str:
    """One indented line per problem, the first MAX_LISTED_PROBLEMS of them, then a count of the rest."""
    listed = "\n".join(f"  - {problem}" for problem in problems[:MAX_LISTED_PROBLEMS])
    more = len(problems) - MAX_LISTED_PROBLEMS
    return f"{listed}\n  ... and {more} more" if more > 0 else listed
