"""Start a plan's work: in this process when it needs one, else its workers through torchrun, plan as JSON."""

import logging
import tempfile
from pathlib import Path

from parabench.engine.plan import RunPlan
from parabench.engine.worker import train_worker
from parabench.runtime.launch import run_workers, worker_command

log = logging.getLogger("parabench.launch")
WORKER_MODULE = "parabench.engine.worker"


def run_plan_workers(plan: RunPlan, what: str, worker_args: list[str] | None = None) -> None:
    """Run the plan's workers in fresh processes (torchrun when distributed); they read the plan from a file."""
    with tempfile.TemporaryDirectory(prefix="parabench-plan-") as scratch:
        plan_file = Path(scratch) / "plan.json"
        plan.save(plan_file)
        processes = plan.processes_per_node if plan.distributed else None
        command = worker_command(WORKER_MODULE, [str(plan_file), *(worker_args or [])], processes,
                                 plan.machine.max_restarts)
        run_workers(command, plan.threads, what, plan.machine.max_restarts)


def train(plan: RunPlan) -> None:
    """Train a checked plan with as many processes as its strategy needs (one: right here), once the workload has
    what its initialisation reads."""
    log.info("%s@%s: strategy %s (%s), %d process(es) x %d thread(s), global batch %d, lr %g on %s",
             plan.role, plan.workload_name, plan.strategy_name, plan.strategy.summary, plan.processes, plan.threads,
             plan.global_batch, plan.lr, plan.machine.accelerator)
    plan.workload.prefetch(plan.settings)
    if plan.distributed:
        run_plan_workers(plan, f"{plan.role}@{plan.workload_name}")
    else:
        train_worker(plan)
