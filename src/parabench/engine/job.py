"""One worker's life, the same for training and benchmark workers: threads, seed, process group, teardown."""

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from parabench.engine.plan import RunPlan
from parabench.runtime.process import Process, start, stop


@contextmanager
def job(plan: RunPlan) -> Iterator[Process]:
    """Set the plan's threads and seed, join the job's process group (under torchrun), leave it when the body ends.

    Only a body that succeeded leaves the group. An exception propagates with the group still joined: since torch
    2.6 destroy_process_group may block on a group with a failed or pending collective (an out-of-memory error
    mid-step), so destroying it first could hang the process before it prints why it failed. The process prints
    the error and exits instead; the OS and torchrun clean up after it.

    Inside, a step's time is that of the slowest process (runtime.collectives.slowest_per_step).
    """
    torch.set_num_threads(plan.threads)
    torch.manual_seed(plan.settings.seed)
    process = start(plan.machine)
    yield process
    stop()
