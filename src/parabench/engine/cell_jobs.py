"""The jobs that time benchmark cells: one warm job per process layout serves every cell of that layout, or (`fresh`)
a job of its own for each cell.

Starting a worker (importing torch and torchvision, torchrun's agent, the process group) takes seconds, more than a
quick cell's timed steps. So by default each process layout (one plain process; N ranks under torchrun) gets one job
for the whole stage, started when its first cell comes, idle (looking for its next command) while
another layout's cell runs, and handed its cells one at a time through an inbox folder (engine/cell_worker.py).
Whoever waits (the launcher for a result, an idle worker for its next command) looks again after 5 ms, then less
and less often, down to every POLL_LONGEST_S: on 2 cores, each of a few idle processes waking every 5 ms while a
cell runs takes a core from one of the cell's threads at every wake-up, and a parallel region waits for it.
Between cells the worker resets the seed, threads, heap and device cache, and builds the model, optimiser and
strategy anew; a job's first cell is run once untimed before any, so that no cell pays for the process's first
steps. `fresh` runs every cell in new processes instead (`benchmark.workers: fresh`): the way to check that a warm
worker times cells as fresh processes do. The A/A control (a second `single` cell) gets a warm job of its own: two
processes running the same thing may differ (where their memory lies, which core they get) where two moments of one
process do not, and the noise floor the control sets must span that.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parabench.config import WorkerMode
from parabench.engine.plan import RunPlan
from parabench.io import read_json, write_json
from parabench.records import CellRun
from parabench.runtime.torchrun import WorkerJob, worker_command

log = logging.getLogger("parabench.cells")
CELL_WORKER_MODULE = "parabench.engine.cell_worker"
POLL_FIRST_S = 0.005  # how soon a waiter looks again at first: a quick answer is picked up within 5 ms
POLL_LONGEST_S = 0.05  # the longest pause between looks: at most 20 wake-ups a second per waiting process
READY = "ready"  # rank 0 writes time.time() here once it is ready for its first cell


def wait_until(done: Callable[[], bool]) -> None:
    """Return once `done()` is true, looking after POLL_FIRST_S, then at pauses that double up to POLL_LONGEST_S."""
    pause = POLL_FIRST_S
    while not done():
        time.sleep(pause)
        pause = min(2 * pause, POLL_LONGEST_S)


@dataclass(frozen=True)
class Layout:
    """The processes a cell runs in: one plain process, or `processes` ranks of a torchrun job, with their threads."""

    distributed: bool
    processes: int
    threads: int
    apart: bool = False  # a second job of the same processes (the A/A control's)

    @classmethod
    def of(cls, plan: RunPlan, apart: bool = False) -> "Layout":
        """The layout of a planned cell; `apart`: in a job of its own beside the layout's shared one."""
        return cls(plan.distributed, plan.processes_per_node, plan.threads, apart)

    def __str__(self) -> str:
        kind = f"{self.processes} torchrun rank(s)" if self.distributed else "1 plain process"
        return f"{kind} x {self.threads} thread(s){', apart' if self.apart else ''}"


class CellJob:
    """One job of workers for one layout, timing the cells it is handed, in order."""

    def __init__(self, layout: Layout, inbox: Path, what: str):
        inbox.mkdir(parents=True)
        self.inbox, self.what, self.sent = inbox, what, 0
        command = worker_command(CELL_WORKER_MODULE, [str(inbox)], layout.processes if layout.distributed else None)
        self.launched_at = time.time()
        self.job = WorkerJob(command, layout.threads, what)

    def start_up_s(self) -> float | None:
        """Seconds from the launch to the workers ready for their first cell (torch imported, the process group
        joined), as rank 0 noted it; None before it did."""
        ready = self.inbox / READY
        return float(ready.read_text()) - self.launched_at if ready.exists() else None

    def send(self, command: dict[str, Any]) -> None:
        """Hand the workers their next command."""
        write_json(self.inbox / f"{self.sent}.json", command)
        self.sent += 1

    def measure(self, plan: RunPlan, warmup: int, steps: int, count_kept: bool = False) -> CellRun:
        """Time one cell: `warmup` steps left out, then `steps` timed (and, with `count_kept`, one more step whose
        bytes kept for backward are counted); what rank 0 measured."""
        out = self.inbox / f"{self.sent}.out.json"
        self.send(
            {
                "plan": plan.model_dump(mode="json"),
                "warmup": warmup,
                "steps": steps,
                "count_kept": count_kept,
                "out": str(out),
            }
        )
        wait_until(lambda: out.exists() or not self.job.running())
        if not out.exists():
            self.job.wait()  # raises, naming what failed
            raise RuntimeError(f"{self.what}: the workers ended before they timed the cell")
        return CellRun.model_validate(read_json(out))

    def close(self) -> None:
        """Tell the workers to stop and wait for them (a failure raises); kill what remains."""
        try:
            if self.job.running():
                self.send({"stop": True})
                self.job.wait()
        finally:
            self.job.close()


class CellJobs:
    """The jobs of a benchmark or sweep stage: warm ones by layout, or a fresh one per cell."""

    def __init__(self, scratch: Path, workers: WorkerMode, what: str):
        self.scratch, self.workers, self.what = scratch, workers, what
        self.warm: dict[Layout, CellJob] = {}
        self.started = 0
        self.start_up_s = 0.0  # every job's seconds from launch to ready, added up as each job closes

    def _start(self, layout: Layout) -> CellJob:
        self.started += 1
        return CellJob(layout, self.scratch / f"job-{self.started}", f"{self.what} ({layout})")

    def _close(self, job: CellJob) -> None:
        self.start_up_s += job.start_up_s() or 0.0
        job.close()

    def measure(self, plan: RunPlan, warmup: int, steps: int, apart: bool = False, count_kept: bool = False) -> CellRun:
        """Time one cell in the job of its layout (warm: started, and primed with one untimed run of this cell, when
        the layout's first cell comes; `apart`: a second warm job of that layout), or in a job of its own (fresh)."""
        layout = Layout.of(plan, apart)
        if self.workers == "fresh":
            job = self._start(layout)
            try:
                return job.measure(plan, warmup, steps, count_kept)
            finally:
                self._close(job)
        if layout not in self.warm:
            self.warm[layout] = self._start(layout)
            self.warm[layout].measure(plan, warmup, 1)
            log.info("%s: workers of %s ready in %.1f s", self.what, layout, self.warm[layout].start_up_s() or 0.0)
        return self.warm[layout].measure(plan, warmup, steps, count_kept)

    def close(self) -> None:
        """Stop every warm job."""
        failures = []
        for job in self.warm.values():
            try:
                self._close(job)
            except Exception as failure:  # close the others all the same, then say what failed
                failures.append(failure)
        self.warm.clear()
        if failures:
            raise failures[0]

    def __enter__(self) -> "CellJobs":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
