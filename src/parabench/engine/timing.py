"""Step timing: devices synchronised before each clock read, warm-up steps excluded, median and spread."""

import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from parabench.records import StepSigns, StepTimes
from parabench.runtime.collectives import synchronize
from parabench.runtime.step_signs import os_mark, signs_between

PHASES = ("input", "forward_backward", "optimizer")  # the parts of a step a clock that times phases records


class StepClock:
    """Times each training step on `devices` (every device the step computes on: all are waited for before each clock
    read); the first `warmup_steps` of this process's run are not kept.

    With `phases`, the step also marks where each of its PHASES ends (`mark`, devices synchronised first: on CUDA
    that is one more wait per phase, so only benchmark cells time phases), kept per step in `phases`; the time
    after the last mark (the closing synchronisation) is counted in the last phase, so a step's phases add up to it.
    With `signs`, what the operating system saw of the process over each kept step is kept in `signs` (its counters
    are read just outside the clock).
    """

    def __init__(
        self,
        devices: Sequence[torch.device],
        warmup_steps: int,
        kept: list[float] | None = None,
        phases: bool = False,
        signs: bool = False,
    ):
        self.devices = tuple(devices)
        self.warmup_left = warmup_steps
        self.durations: list[float] = list(kept or [])
        self.warmup_durations: list[float] = []  # this process's warm-up steps, kept apart
        self.times_phases = phases
        self.phases: list[dict[str, float]] = []
        self.reads_signs = signs
        self.signs: list[StepSigns] = []
        self._current: dict[str, float] = {}
        self._last_mark = 0.0

    def synchronize(self) -> None:
        """Wait for the queued work of every device."""
        for device in self.devices:
            synchronize(device)

    def mark(self, phase: str) -> None:
        """End `phase` of the step being timed (a no-op unless this clock times phases)."""
        if self.times_phases:
            self.synchronize()
            now = time.perf_counter()
            self._current[phase] = now - self._last_mark
            self._last_mark = now

    @contextmanager
    def step(self) -> Iterator[None]:
        """Time the block; keep the duration (and its phases) unless it is a warm-up step."""
        self.synchronize()
        before = os_mark() if self.reads_signs else None
        start = self._last_mark = time.perf_counter()
        self._current = {}
        yield
        self.synchronize()
        end = time.perf_counter()
        if self.warmup_left > 0:
            self.warmup_left -= 1
            self.warmup_durations.append(end - start)
            return
        self.durations.append(end - start)
        if before is not None:
            self.signs.append(signs_between(before, os_mark(), end - start))
        if self.times_phases:
            last = next(reversed(self._current))
            self._current[last] += end - self._last_mark
            self.phases.append(self._current)


def summarize(durations: list[float]) -> StepTimes:
    """Median, quartiles and extremes of step times (at least one), in seconds."""
    quartiles = statistics.quantiles(durations, n=4) if len(durations) > 1 else [durations[0]] * 3
    return StepTimes(
        steps=len(durations),
        median=statistics.median(durations),
        p25=quartiles[0],
        p75=quartiles[2],
        min=min(durations),
        max=max(durations),
        total=sum(durations),
    )
