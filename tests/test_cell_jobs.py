"""Cell jobs: one per process layout, single and its A/A control in jobs of their own, so that the two differ only by
being two processes; the commands reach a blocked worker without polling; a paused job takes no CPU at all."""

import signal
import sys
import threading
import time
from types import SimpleNamespace

import psutil

from parabench.engine import cell_jobs
from parabench.engine.cell_channel import LauncherEnd, WorkerEnd
from parabench.engine.cell_jobs import CellJobs
from parabench.runtime.torchrun import WorkerJob


def test_cells_of_a_layout_share_its_job_and_single_and_its_a_a_control_each_get_their_own(monkeypatch, tmp_path):
    started = []

    class RecordedJob:
        def __init__(self, plan, layout, inbox, what):
            started.append(str(layout))

    monkeypatch.setattr(cell_jobs, "CellJob", RecordedJob)
    plan = SimpleNamespace(distributed=False, processes_per_node=1, threads=2)
    ranks = SimpleNamespace(distributed=True, processes_per_node=2, threads=1)
    with CellJobs(tmp_path, "benchmark@test") as jobs:
        jobs.close = lambda: None
        single, control = jobs.of(plan, owner="single"), jobs.of(plan, owner="single_control")
        model_parallel, pipeline = jobs.of(plan), jobs.of(plan)
        ddp, fsdp = jobs.of(ranks), jobs.of(ranks)
    assert (
        model_parallel is pipeline and ddp is fsdp and len({id(job) for job in (single, control, pipeline, ddp)}) == 4
    )
    assert started == [
        "1 plain process x 2 thread(s), single alone",
        "1 plain process x 2 thread(s), single_control alone",
        "1 plain process x 2 thread(s)",
        "2 torchrun rank(s) x 1 thread(s)",
    ]


def test_a_command_reaches_every_blocked_rank_and_rank_0_s_answer_comes_back(tmp_path):
    launcher = LauncherEnd(tmp_path / "inbox", ranks=2)
    ranks = [WorkerEnd(tmp_path / "inbox", rank) for rank in range(2)]
    received: list[dict] = []

    def serve(rank: WorkerEnd) -> None:
        command = rank.next_command()  # blocks in a read until the byte comes
        received.append(command)
        if rank.rank == 0:
            rank.answer({"steps": command["steps"] * 2})

    threads = [threading.Thread(target=serve, args=(rank,)) for rank in ranks]
    for thread in threads:
        thread.start()
    time.sleep(0.05)
    assert not received, "nothing is read before the command is sent"
    number = launcher.send({"steps": 3})
    assert launcher.answer(number, running=lambda: True) == {"steps": 6}
    for thread in threads:
        thread.join(timeout=5)
    assert received == [{"steps": 3}, {"steps": 3}]
    launcher.close()


def test_the_launcher_stops_waiting_once_the_workers_are_gone(tmp_path):
    launcher = LauncherEnd(tmp_path / "inbox", ranks=1)
    number = launcher.send({"steps": 1})
    assert launcher.answer(number, running=lambda: False) is None
    launcher.close()


def until(done, seconds: float = 1.0) -> bool:
    """Whether `done()` comes true within `seconds` (a signal is delivered, not received, when kill returns)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_paused_job_takes_no_cpu_until_it_is_resumed(tmp_path):
    busy = [sys.executable, "-c", "import time\nwhile True: time.sleep(0.001)"]
    job = WorkerJob(busy, threads=1, what="a waking process", death_signal=signal.SIGKILL)
    try:
        process = psutil.Process(job.process.pid)
        time.sleep(0.3)
        job.pause()
        assert until(lambda: process.status() == psutil.STATUS_STOPPED), "the signal arrives within a second"
        before = sum(process.cpu_times()[:2])
        time.sleep(0.5)
        assert sum(process.cpu_times()[:2]) == before, "not one wake-up while paused"
        job.resume()
        assert until(lambda: process.status() != psutil.STATUS_STOPPED) and job.running()
        job.pause()
    finally:
        job.close()
    assert not job.running(), "a paused job is killed all the same"
