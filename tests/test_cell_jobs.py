"""Warm cell jobs: one per process layout, and the A/A control in a job of its own, so that its floor spans two
processes."""

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
