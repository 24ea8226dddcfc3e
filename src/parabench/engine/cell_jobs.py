"""The jobs that time benchmark and sweep cells: one job of workers per process layout (one plain process; N ranks
under torchrun), each keeping every cell of its layout alive from its setup to the stage's last turn; `single` and
its A/A control have a job each to themselves.

Starting a worker (importing torch and torchvision, torchrun's agent, the process group) takes seconds, more than a
quick cell's timed steps, and every process on 2 cores takes memory and start-up time from the others: so cells share
their layout's job. Every job of a stage is launched at once, so that their start-ups overlap one another and no timed
step; the cells are then set up one at a time (their warm-up, and what a cut times of its blocks, run on a quiet
machine), and take their turns. The A/A control runs `single` again in processes of its own: two processes running
the same thing differ (where their memory lies, which core they get) where two cells of one process do not, and the
noise floor it sets must span that. `single` is alone in its job too: beside other cells' models (model_parallel's,
the pipeline's) its steps ran 2-5% slower than the control's alone, a difference that was not the machine's noise.

A job whose cells are not being timed is paused (SIGSTOP): an idle rank still wakes, gloo's network thread about 100
times a second and torchrun's monitor 12 times, and on 2 cores each wake-up takes a core from the cell being timed,
whose parallel regions then wait (docs/reference-figures.md has what that cost). Idle workers block on their inbox
(engine/cell_channel.py).
"""

import logging
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parabench.engine.cell_channel import LauncherEnd
from parabench.engine.plan import RunPlan
from parabench.records import CellSetup, CellTurn
from parabench.runtime.torchrun import WorkerJob, worker_command

log = logging.getLogger("parabench.cells")
CELL_WORKER_MODULE = "parabench.engine.cell_worker"


@dataclass(frozen=True)
class Layout:
    """The processes a cell runs in: one plain process, or `processes` ranks of a torchrun job, with their threads."""

    distributed: bool
    processes: int
    threads: int
    owner: str = ""  # the cell that has a job of these processes to itself ("": the layout's shared job)

    @classmethod
    def of(cls, plan: RunPlan, owner: str = "") -> "Layout":
        """The layout of a planned cell; `owner`: the cell's label, where it has a job of its own."""
        return cls(plan.distributed, plan.processes_per_node, plan.threads, owner)

    def __str__(self) -> str:
        kind = f"{self.processes} torchrun rank(s)" if self.distributed else "1 plain process"
        return f"{kind} x {self.threads} thread(s){f', {self.owner} alone' if self.owner else ''}"


class CellJob:
    """One layout's job of workers, answering the commands it is sent, in order; paused between them."""

    def __init__(self, plan: RunPlan, layout: Layout, inbox: Path, what: str):
        self.what = what
        self.channel = LauncherEnd(inbox, layout.processes if layout.distributed else 1)
        self.launched_at = time.time()
        command = worker_command(CELL_WORKER_MODULE, [str(inbox)], layout.processes if layout.distributed else None)
        self.job = WorkerJob(command, layout.threads, what, death_signal=signal.SIGKILL)
        self._join = self.channel.send({"machine": plan.machine.model_dump(mode="json")})
        self.start_up_s: float | None = None

    def _answer(self, number: int) -> dict[str, Any]:
        """Rank 0's answer to command `number`; the job is then paused until its next command."""
        answer = self.channel.answer(number, self.job.running)
        if answer is None:
            self.job.wait()  # raises, naming what failed
            raise RuntimeError(f"{self.what}: the workers ended before they answered")
        self.job.pause()
        return answer

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        self.job.resume()
        return self._answer(self.channel.send(command))

    def joined(self) -> float:
        """Wait until the workers are ready (torch imported, the process group joined); the seconds from the launch."""
        self.start_up_s = self._answer(self._join)["ready_at"] - self.launched_at
        return self.start_up_s

    def setup(self, label: str, plan: RunPlan, warmup: int) -> CellSetup:
        """Build the cell, warm it up with `warmup` steps and count what is counted off the clock."""
        return CellSetup.model_validate(
            self._ask({"cell": label, "plan": plan.model_dump(mode="json"), "warmup": warmup})
        )

    def turn(self, label: str, steps: int) -> CellTurn:
        """Time `steps` more steps of the cell."""
        return CellTurn.model_validate(self._ask({"cell": label, "steps": steps}))

    def stop(self) -> None:
        """Tell the workers to stop and wait for them (a failure raises)."""
        self.job.resume()
        self.channel.send({"stop": True})
        self.job.wait()

    def close(self) -> None:
        """Kill whatever of the job still runs."""
        self.job.close()
        self.channel.close()


class CellJobs:
    """The jobs of a benchmark or sweep stage, one per layout; all of them closed on the way out."""

    def __init__(self, scratch: Path, what: str):
        self.scratch, self.what = scratch, what
        self.jobs: dict[Layout, CellJob] = {}

    def of(self, plan: RunPlan, owner: str = "") -> CellJob:
        """The job of a cell's layout (of its own where `owner` names it), launched when its first cell asks (its
        workers then import and join the process group on their own)."""
        layout = Layout.of(plan, owner)
        if layout not in self.jobs:
            inbox = self.scratch / f"job-{len(self.jobs) + 1}"
            self.jobs[layout] = CellJob(plan, layout, inbox, f"{self.what} ({layout})")
        return self.jobs[layout]

    def stop(self) -> None:
        """Stop every job, each after its last turn."""
        for job in self.jobs.values():
            job.stop()

    def close(self) -> None:
        """Kill every job still running."""
        for job in self.jobs.values():
            job.close()

    def __enter__(self) -> "CellJobs":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
