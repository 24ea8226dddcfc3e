"""One overall deadline for a stage's downloads (params.yaml data.timeout_s): however many files, URLs and retries,
the stage gives up when it passes, instead of waiting out every timeout of every attempt."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("download_deadline", default=None)


@contextmanager
def download_deadline(seconds: float) -> Iterator[None]:
    """Every fetch inside the block ends by `seconds` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining_s() -> float | None:
    """Seconds left before the deadline (never below 0), or None when no deadline is set."""
    deadline = _deadline.get()
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def within_deadline(seconds: float) -> float:
    """`seconds`, cut to what is left of the deadline."""
    left = remaining_s()
    return seconds if left is None else min(seconds, left)
