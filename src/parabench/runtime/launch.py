"""Start N worker processes of a Python module through torchrun, or one plain process, with a thread budget."""

import logging
import os
import subprocess
import sys

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


def run_workers(command: list[str], threads: int, what: str) -> None:
    """Run a worker command with `threads` OpenMP threads per process; a failure names what failed."""
    log.info("launching: %s", " ".join(command))
    completed = subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": str(threads)}, check=False)
    if completed.returncode != 0:
        raise ParabenchError(
            f"the worker(s) of {what} exited with status {completed.returncode}; their messages are above."
        )
