"""Warm cell jobs: one per process layout, and the A/A control in a job of its own, so that its floor spans two
processes; whoever waits looks less and less often, so that idle processes do not take cores from a timed cell."""

from types import SimpleNamespace

from parabench.engine import cell_jobs
from parabench.engine.cell_jobs import CellJobs


def test_cells_of_a_layout_share_its_warm_job_and_the_a_a_control_gets_its_own(monkeypatch, tmp_path):
    started = []

    class RecordedJob:
        def __init__(self, layout, inbox, what):
            started.append(str(layout))
            self.number = len(started)

        def measure(self, plan, warmup, steps, count_kept=False):
            return {"job": self.number}

        def start_up_s(self):
            return 0.0

        def close(self):
            pass

    monkeypatch.setattr(cell_jobs, "CellJob", RecordedJob)
    plan = SimpleNamespace(distributed=False, processes_per_node=1, threads=2)
    with CellJobs(tmp_path, "warm", "benchmark@test") as jobs:
        single = jobs.measure(plan, 1, 4)
        model_parallel = jobs.measure(plan, 1, 4)
        control = jobs.measure(plan, 1, 4, apart=True)
        single_again = jobs.measure(plan, 1, 4)
    assert single == model_parallel == single_again != control
    assert started == ["1 plain process x 2 thread(s)", "1 plain process x 2 thread(s), apart"]


def test_a_waiter_looks_again_at_doubling_pauses_up_to_the_longest(monkeypatch):
    pauses, looks = [], iter([False] * 7 + [True])
    monkeypatch.setattr(cell_jobs.time, "sleep", pauses.append)
    cell_jobs.wait_until(lambda: next(looks))
    assert pauses == [0.005, 0.01, 0.02, 0.04, 0.05, 0.05, 0.05]
    cell_jobs.wait_until(lambda: True)
    assert len(pauses) == 7, "no pause when it is already done"
