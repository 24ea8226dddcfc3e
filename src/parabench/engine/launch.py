"""Start a training run: in this process, or as N worker processes through torchrun."""

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


def torchrun_command(plan: RunPlan, workload_name: str) -> list[str]:
    """The torchrun (torch.distributed.run) command line that starts this node's workers."""
    machine = plan.machine
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--standalone", "--nnodes=1",
        f"--nproc-per-node={plan.processes_per_node}",
        f"--max-restarts={machine.max_restarts}",
        "-m", "parabench.engine.worker", workload_name, plan.role,
    ]


def train(workload_name: str, role: str) -> None:
    """Plan and check the run first, then train it with as many processes as its strategy needs."""
    plan = make_plan(load_params(), workload_name, role)
    log.info("%s@%s: strategy %s, %d process(es) x %d thread(s), global batch %d, lr %g on %s",
             role, workload_name, plan.strategy.name, plan.processes, plan.threads, plan.global_batch, plan.lr,
             plan.machine.accelerator)
    if not plan.distributed or launched_by_torchrun():
        run_worker(workload_name, role)
        return
    command = torchrun_command(plan, workload_name)
    log.info("launching: %s", " ".join(command))
    env = {**os.environ, "OMP_NUM_THREADS": str(plan.threads)}
    completed = subprocess.run(command, env=env, check=False)
    if completed.returncode != 0:
        raise ParabenchError(
            f"torchrun exited with status {completed.returncode}: the {plan.strategy.name} workers of "
            f"{role}@{workload_name} failed; their messages are above."
        )
