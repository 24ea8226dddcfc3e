"""What is recorded beside every number: the CPU model and vector ISA, and how busy the machine was with others."""

import os
import time

import pytest
import torch

from parabench.runtime import load
from parabench.runtime.environment import describe, machine_identity
from tests.setups import cpu_setup


def test_every_environment_block_names_the_cpu_model_and_its_vector_isa():
    identity = machine_identity()
    assert identity["cpu_model"] and identity["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert identity["torch"] == torch.__version__ and identity["cores"] >= 1
    block = describe(cpu_setup(devices=2).machine, processes=2, threads=1, distributed=True)
    assert {"cpu_model", "cpu_capability", "cpu_vector_flags", "backend", "threads_per_process"} <= set(block)
    assert block["backend"] == "gloo"


def mark(wall: float, machine: float, own: float) -> load.LoadMark:
    return load.LoadMark(wall=wall, machine_cpu=machine, own_cpu=own)


def test_other_programs_share_is_the_machines_busy_time_not_ours(monkeypatch):
    monkeypatch.setattr(load.os, "cpu_count", lambda: 2)
    # 10 s on 2 cores = 20 CPU-seconds; the machine was busy 15, of which we used 11: others took 4, a fifth.
    assert load.other_cpu_share(mark(0, 100, 5), mark(10, 115, 16), own_cpu_seconds_all_ranks=11) == pytest.approx(0.2)
    assert load.other_cpu_share(mark(0, 100, 5), mark(10, 110, 15), own_cpu_seconds_all_ranks=10) == 0.0
    assert load.other_cpu_share(mark(0, 100, 0), mark(0.5, 101, 0), 0) is None, "too short for clock ticks"
    assert load.other_cpu_share(mark(0, None, 0), mark(10, None, 0), 0) is None, "no /proc/stat"


def test_a_busy_machine_is_seen(monkeypatch):
    """Burn CPU in this process but do not count it as ours: the share must show it."""
    start = load.mark()
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline:
        pass
    share = load.other_cpu_share(start, load.mark(), own_cpu_seconds_all_ranks=0.0)
    if share is None:
        pytest.skip("no /proc/stat on this system")
    assert share > 0.5 / (os.cpu_count() or 1), "one core of the machine's was busy"
