"""Start N worker processes of a Python module through torchrun, or one plain process, with a thread budget."""

import logging
import os
import re
import subprocess
import sys
import tempfile

from parabench.errors import ParabenchError

log = logging.getLogger("parabench.launch")


def worker_command(module: str, args: list[str], processes_per_node: int | None, max_restarts: int = 0) -> list[str]:
    """`python -m module args`, under torchrun (single node, standalone rendezvous) when processes_per_node is set."""
    if processes_per_node is None:
        return [sys.executable, "-m", module, *args]
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--standalone", "--nnodes=1",
        f"--nproc-per-node={processes_per_node}",
        f"--max-restarts={max_restarts}",
        "-m", module, *args,
    ]


TAIL_CHARS = 20_000  # torchrun's failure summary comes last; keep this much of stderr to read it
ROOT_CAUSE = re.compile(
    r"Root Cause \(first observed failure\):.*?host\s*:\s*(?P<host>\S+).*?rank\s*:\s*(?P<rank>\d+)\s*"
    r"\(local_rank:\s*(?P<local_rank>\d+)\).*?exitcode\s*:\s*(?P<exitcode>-?\d+)[^\n]*?(?:\((?P<signal>SIG\w+)\))?\n",
    re.DOTALL,
)


def run_workers(command: list[str], threads: int, what: str) -> None:
    """Run a worker command with `threads` OpenMP threads per process; a failure names what failed, and under
    torchrun which rank on which host failed first.

    stderr passes through as it comes (progress bars included) while its tail is kept for torchrun's summary.
    torchrun's own temporary folders (torchelastic_*) go into a folder of ours, removed afterwards.
    """
    log.info("launching: %s", " ".join(command))
    with tempfile.TemporaryDirectory(prefix="parabench-workers-") as scratch:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TMPDIR": scratch}
        with subprocess.Popen(command, env=env, stderr=subprocess.PIPE) as process:
            tail = _pass_through(process.stderr.fileno())  # type: ignore[union-attr]
            status = process.wait()
    if status != 0:
        raise ParabenchError(failure_message(what, status, tail))


def _pass_through(fd: int) -> str:
    """Copy a pipe to our stderr until it closes; return its last TAIL_CHARS characters."""
    tail = b""
    while chunk := os.read(fd, 65536):
        sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.flush()
        tail = (tail + chunk)[-TAIL_CHARS:]
    return tail.decode(errors="replace")


def failure_message(what: str, status: int, stderr_tail: str) -> str:
    """Which worker failed first and how (from torchrun's summary when there is one), and what to do."""
    cause = ROOT_CAUSE.search(stderr_tail)
    if cause is None:
        return f"the worker(s) of {what} exited with status {status}; their messages are above."
    how = f"was killed by {cause['signal']}" if cause["signal"] else f"exited with status {cause['exitcode']}"
    return (
        f"the worker(s) of {what} failed: rank {cause['rank']} (local rank {cause['local_rank']}) on host "
        f"{cause['host']} {how} first, and torchrun stopped the others; its messages are above. Run again to "
        "resume from the last epoch checkpoint."
    )
