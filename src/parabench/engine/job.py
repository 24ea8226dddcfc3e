"""One worker's life, the same for training and benchmark workers: threads, seed, process group, teardown."""

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from parabench.engine.plan import RunPlan
from parabench.runtime.process import Process, start, stop


@contextmanager
def job(plan: RunPlan) -> Iterator[Process]:
    """Set the plan's threads and seed, join the job's process group (under torchrun), leave it at the end.

    Inside, a step's time is that of the slowest process (runtime.collectives.slowest_per_step).
    """
    torch.set_num_threads(plan.threads)
    torch.manual_seed(plan.settings.seed)
    process = start(plan.machine)
    try:
        yield process
    finally:
        stop()
