"""Start work in worker processes: in this process, or N of them through torchrun."""

import logging
import os
import subprocess
import sys

from parabench.config import load_params
from parabench.engine.distributed import launched_by_torchrun
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.worker import run_worker
from parabench.errors import ParabenchError

log = logging.getLogger("parabench.launch")


def worker_command(plan: RunPlan, module: str, args: list[str]) -> list[str]:
    """The command that runs `python -m module args` as the plan's workers: torchrun when distributed."""
    if not plan.distributed:
        return [sys.executable, "-m", module, *args]
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--standalone", "--nnodes=1",
        f"--nproc-per-node={plan.processes_per_node}",
        f"--max-restarts={plan.machine.max_restarts}",
        "-m", module, *args,
    ]


def run_command(plan: RunPlan, command: list[str], what: str) -> None:
    """Run a worker command with the plan's threads per process; a failure names what failed."""
    log.info("launching: %s", " ".join(command))
    env = {**os.environ, "OMP_NUM_THREADS": str(plan.threads)}
    completed = subprocess.run(command, env=env, check=False)
    if completed.returncode != 0:
        raise ParabenchError(
            f"the {plan.strategy.name} worker(s) of {what} exited with status {completed.returncode}; "
            "their messages are above."
        )


def train(workload_name: str, role: str) -> None:
    """Plan and check the run first, then train it with as many processes as its strategy needs."""
    plan = make_plan(load_params(), workload_name, role)
    log.info("%s@%s: strategy %s (%s), %d process(es) x %d thread(s), global batch %d, lr %g on %s",
             role, workload_name, plan.strategy.name, plan.strategy.summary, plan.processes, plan.threads,
             plan.global_batch, plan.lr, plan.machine.accelerator)
    if not plan.distributed or launched_by_torchrun():
        run_worker(workload_name, role)
        return
    run_command(plan, worker_command(plan, "parabench.engine.worker", [workload_name, role]),
                f"{role}@{workload_name}")
