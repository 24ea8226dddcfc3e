"""Workers die with whoever started them: SIGKILL the process that launched a job of warm cell workers (one plain
process, or torchrun's agent and its two ranks) and every process of the job is gone within seconds."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import python_path

GONE_WITHIN_S = 15.0  # torchrun's agent, on SIGTERM, stops its workers; they also get SIGKILL from their own request

LAUNCHER = textwrap.dedent("""
    import sys, time
    from parabench.engine.cell_jobs import CELL_WORKER_MODULE
    from parabench.runtime.torchrun import WorkerJob, worker_command
    processes = None if sys.argv[2] == "plain" else 2
    job = WorkerJob(worker_command(CELL_WORKER_MODULE, [sys.argv[1]], processes), 1, "test@orphans")
    print("started", flush=True)
    time.sleep(3600)  # the workers wait for a command that never comes
""")


def command_line(process: psutil.Process) -> list[str]:
    """A process's command line; none for one that ended since it was listed (torchrun starts short-lived helpers)."""
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return []


def workers_below(parent: psutil.Process) -> list[psutil.Process]:
    return [
        child
        for child in parent.children(recursive=True)
        if any("parabench.engine.cell_worker" in part for part in command_line(child))
    ]


@pytest.mark.parametrize("layout", ["plain", "torchrun"])
def test_killing_the_launching_process_ends_every_worker(tmp_path: Path, layout: str):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    env = {**os.environ, "PYTHONPATH": python_path()}
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(inbox), layout], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert launcher.stdout is not None and launcher.stdout.readline().strip() == "started"
        parent = psutil.Process(launcher.pid)
        expected = 1 if layout == "plain" else 3  # the plain worker; or torchrun's agent and two ranks
        deadline = time.monotonic() + 120
        while len(job := workers_below(parent)) < expected or (
            layout == "torchrun" and len([p for p in job if "--nproc-per-node" not in " ".join(command_line(p))]) < 2
        ):
            assert time.monotonic() < deadline, f"the job did not start: {[command_line(p) for p in job]}"
            time.sleep(0.2)
        time.sleep(2)  # past the workers' own request to die with their parent (the first thing they do)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
        _, alive = psutil.wait_procs(job, timeout=GONE_WITHIN_S)
        assert not alive, (
            f"still running {GONE_WITHIN_S} s after their launcher was killed: "
            f"{[command_line(process) for process in alive]}"
        )
    finally:
        for process in (
            [launcher.pid, *(p.pid for p in workers_below(psutil.Process(launcher.pid)))]
            if launcher.poll() is None
            else []
        ):
            os.kill(process, signal.SIGKILL)
