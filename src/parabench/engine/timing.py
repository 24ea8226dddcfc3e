"""Step timing: devices synchronised before each clock read, warm-up steps excluded, median and spread."""

import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from parabench.runtime.collectives import synchronize


class StepClock:
    """Times each training step on `devices` (every device the step computes on: all are waited for before each clock
    read); the first `warmup_steps` of this process's run are not kept."""

    def __init__(self, devices: Sequence[torch.device], warmup_steps: int, kept: list[float] | None = None):
        self.devices = tuple(devices)
        self.warmup_left = warmup_steps
        self.durations: list[float] = list(kept or [])

    def synchronize(self) -> None:
        """Wait for the queued work of every device."""
        for device in self.devices:
            synchronize(device)

    @contextmanager
    def step(self) -> Iterator[None]:
        """Time the block; keep the duration unless it is a warm-up step."""
        self.synchronize()
        start = time.perf_counter()
        yield
        self.synchronize()
        elapsed = time.perf_counter() - start
        if self.warmup_left > 0:
            self.warmup_left -= 1
        else:
            self.durations.append(elapsed)


def summarize(durations: list[float]) -> dict[str, float | int]:
    """Median, quartiles and extremes of step times, in seconds."""
    if not durations:
        return {"steps": 0}
    quartiles = statistics.quantiles(durations, n=4) if len(durations) > 1 else [durations[0]] * 3
    return {
        "steps": len(durations),
        "median": statistics.median(durations),
        "p25": quartiles[0],
        "p75": quartiles[2],
        "min": min(durations),
        "max": max(durations),
        "total": sum(durations),
    }
