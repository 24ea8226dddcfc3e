"""Start N worker processes of a Python module through torchrun, or one plain process, with a thread budget."""

import contextlib
import functools
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from parabench.cli import INTERRUPTED_STATUS, WORKER_ENV
from parabench.errors import ConfigError, Interrupted, ParabenchError
from parabench.runtime.failures import STOP_GRACE_S, failure_message, said_it_stopped
from parabench.runtime.orphans import die_with_parent

log = logging.getLogger("parabench.launch")


@dataclass(frozen=True)
class Rendezvous:
    """How the nodes of a multi-node job meet: torchrun's static rendezvous at node 0's host:port, each node under
    its own rank, so that global rank 0 (which reads the checkpoint and writes the outputs) runs on node 0, where
    DVC waits for them. (The c10d rendezvous ranks the nodes by sorted host name.)"""

    nodes: int
    node_rank: int
    endpoint: str
    join_timeout_s: float


def check_node_rank(node_rank: int, nodes: int) -> None:
    """A joining node's rank is one of the other nodes': 1 to nodes - 1."""
    if not 1 <= node_rank < nodes:
        raise ConfigError(
            f"--node-rank {node_rank}: the other nodes are numbered 1 to {nodes - 1} "
            f"(hardware.nodes: {nodes}; node 0 runs dvc repro)."
        )


def worker_command(
    module: str,
    args: list[str],
    processes_per_node: int | None,
    max_restarts: int = 0,
    rendezvous: Rendezvous | None = None,
) -> list[str]:
    """`python -m module args`, under torchrun (runtime/torchrun_agent.py) when processes_per_node is set: single
    node with a standalone rendezvous, or several nodes meeting through torchrun's static rendezvous."""
    if processes_per_node is None:
        return [sys.executable, "-m", module, *args]
    if rendezvous is None:
        meeting = ["--standalone", "--nnodes=1"]
    else:
        meeting = [
            f"--nnodes={rendezvous.nodes}",
            f"--node-rank={rendezvous.node_rank}",
            "--rdzv-backend=static",
            f"--rdzv-endpoint={rendezvous.endpoint}",
            f"--rdzv-conf=timeout={rendezvous.join_timeout_s:g}",
        ]
    return [
        sys.executable,
        "-m",
        AGENT_MODULE,
        *meeting,
        f"--nproc-per-node={processes_per_node}",
        f"--max-restarts={max_restarts}",
        "-m",
        module,
        *args,
    ]


AGENT_MODULE = "parabench.runtime.torchrun_agent"  # torchrun, its failures and interrupts told without a traceback
PROGRESS_ENV = "PARABENCH_PROGRESS_FILE"  # where rank 0 notes the last step it finished
FAILURES_ENV = "PARABENCH_FAILURES_FILE"  # where the agent writes torchrun's table of the ranks that failed
LAUNCHED_AT_ENV = "PARABENCH_LAUNCHED_AT"  # time.time() when the stage launched the job: rank 0 times it end to end
TAIL_CHARS = 20_000  # torchrun's failure summary comes last; keep this much of stderr to read it


def run_workers(command: list[str], threads: int, what: str, max_restarts: int = 0) -> None:
    """Run a worker command with `threads` OpenMP threads per process until it ends; a failure names what failed, and
    under torchrun which rank on which host failed first (WorkerJob)."""
    with WorkerJob(command, threads, what, max_restarts) as job:
        job.wait()


class WorkerJob:
    """A worker command running in the background with `threads` OpenMP threads per process, started by this
    process's main thread and ending with it.

    stderr passes through as it comes (progress bars included) while its tail is kept for torchrun's summary, read
    by a thread of ours. Once a worker has said it stopped (`error: rank N stopped at ...`, after a lost peer or a
    collective's timeout), or NCCL's watchdog timed a collective out, the job gets STOP_GRACE_S to end, then every
    worker still running is killed, so a hung (stopped, deadlocked) rank costs seconds, neither NCCL's wait before it
    aborts the ranks that waited nor torchrun's 30 s wait per process; not with max_restarts > 0, where torchrun
    restarts the group itself. After Ctrl-C (which reaches torchrun too) the same grace applies.
    The launcher (torchrun, or the one plain worker) gets SIGTERM when this process dies, even by SIGKILL, and its
    workers die with it (runtime.process.die_with_parent): nothing trains on after the stage that started it.
    torchrun's own temporary folders (torchelastic_*) go into a folder of ours, removed when the job is closed.
    `death_signal` is what the launcher gets when this process dies: SIGTERM lets torchrun stop its workers; a job
    that is ever paused needs SIGKILL, which a stopped process cannot leave pending.
    """

    def __init__(
        self, command: list[str], threads: int, what: str, max_restarts: int = 0, death_signal: int = signal.SIGTERM
    ):
        log.info("launching: %s", " ".join(command))
        self.what = what
        self._scratch = tempfile.TemporaryDirectory(prefix="parabench-workers-")
        self._progress = Path(self._scratch.name) / "progress.txt"
        self._failures = Path(self._scratch.name) / "failures.txt"
        env = {
            **os.environ,
            "OMP_NUM_THREADS": str(threads),
            "TMPDIR": self._scratch.name,
            "LOGLEVEL": os.environ.get("LOGLEVEL", "ERROR"),  # torchrun's own log; its warnings repeat what we say
            PROGRESS_ENV: str(self._progress),
            FAILURES_ENV: str(self._failures),
            WORKER_ENV: "1",
        }
        self.process = subprocess.Popen(
            command, env=env, stderr=subprocess.PIPE, preexec_fn=functools.partial(die_with_parent, death_signal)
        )
        self._members: list[psutil.Process] | None = None
        self._tail: str = ""
        self._hung: list[str] | None = None
        self._reader = threading.Thread(target=self._read_stderr, args=(max_restarts == 0,), daemon=True)
        self._reader.start()

    def _read_stderr(self, kill_after_stop: bool) -> None:
        self._tail, self._hung = _watch(self.process, kill_after_stop)

    def running(self) -> bool:
        """Whether the job is still running."""
        return self.process.poll() is None

    def pause(self) -> None:
        """Stop every process of the job (SIGSTOP) until `resume`: a paused job takes no CPU at all, where an idle one
        still wakes (gloo's network thread about 100 times a second in every rank, torchrun's monitor 12 times). Its
        processes are the ones alive at the first pause; a paused job can be killed (close) but not terminated."""
        if self._members is None:
            self._members = [psutil.Process(self.process.pid), *psutil.Process(self.process.pid).children(True)]
        for member in reversed(self._members):
            with contextlib.suppress(psutil.NoSuchProcess):
                member.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused job's processes run again (SIGCONT)."""
        for member in self._members or []:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.send_signal(signal.SIGCONT)

    def wait(self) -> None:
        """Wait for the job to end; raise ParabenchError naming what failed when it did not end well."""
        try:
            status = self.process.wait()
        except KeyboardInterrupt:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=STOP_GRACE_S)
            _kill_workers(self.process.pid)
            raise self._interrupted() from None
        self._reader.join()
        if status in (INTERRUPTED_STATUS, -signal.SIGINT):  # Ctrl-C that reached the job, not this process
            raise self._interrupted()
        if status != 0:
            failures = self._failures.read_text() if self._failures.exists() else ""
            raise ParabenchError(
                failure_message(self.what, status, self._tail + failures, self._hung, self._last_step())
            )

    def _interrupted(self) -> KeyboardInterrupt:
        """Ctrl-C, with how far a training job had got (Interrupted) when its rank 0 noted it."""
        last_step = self._last_step()
        return Interrupted(f"after {last_step}") if last_step is not None else KeyboardInterrupt()

    def _last_step(self) -> str | None:
        """The last step rank 0 of a training job noted it finished, with what its checkpoint holds."""
        return self._progress.read_text() if self._progress.exists() else None

    def close(self) -> None:
        """Kill whatever of the job still runs and remove its scratch folder."""
        if self.running():
            _kill_workers(self.process.pid)
            self.process.kill()
        self.process.wait()
        self._reader.join()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self._scratch.cleanup()

    def __enter__(self) -> "WorkerJob":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _watch(process: subprocess.Popen[bytes], kill_after_stop: bool) -> tuple[str, list[str] | None]:
    """Copy the workers' stderr to ours until it closes, keeping its tail; kill the workers still running
    STOP_GRACE_S after one said it stopped or NCCL's watchdog timed a collective out (when kill_after_stop).
    Returns the tail and the ranks killed so (None when none was)."""
    assert process.stderr is not None, "started with stderr=PIPE"
    fd = process.stderr.fileno()
    tail, stopped_since, killed = b"", None, None
    while True:
        if select.select([fd], [], [], 0.5)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
            tail = (tail + chunk)[-TAIL_CHARS:]
            if kill_after_stop and stopped_since is None and said_it_stopped(tail.decode(errors="replace")):
                stopped_since = time.monotonic()
        if (
            stopped_since is not None
            and killed is None
            and process.poll() is None
            and time.monotonic() - stopped_since > STOP_GRACE_S
        ):
            killed = _kill_workers(process.pid)
    return tail.decode(errors="replace"), killed


def _kill_workers(launcher_pid: int) -> list[str]:
    """SIGKILL every process below the launcher (torchrun starts each worker in a session of its own, so a
    process group does not reach them); torchrun then sees its workers gone and ends. Returns their ranks."""
    ranks = []
    with contextlib.suppress(psutil.NoSuchProcess):
        for worker in psutil.Process(launcher_pid).children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                rank = worker.environ().get("RANK")
                worker.send_signal(signal.SIGKILL)
                if rank is not None:
                    ranks.append(rank)
    return sorted(ranks, key=int)
