"""A training job's launcher, in the stage's process: the plan saved as JSON and the workers started on it (torchrun
when distributed, with other nodes joining; one process: right here).

A worker's life is engine/worker.py's; benchmark cells run in warm workers (engine/cell_jobs.py).
"""

import logging
import os
import tempfile
import time
from pathlib import Path

from parabench.config import load_params
from parabench.engine.plan import Role, RunPlan, make_plan
from parabench.engine.worker import train_worker
from parabench.errors import ConfigError
from parabench.runtime.torchrun import LAUNCHED_AT_ENV, Rendezvous, check_node_rank, run_workers, worker_command

log = logging.getLogger("parabench.launch")
WORKER_MODULE = "parabench.engine.worker"
JOIN_MODULE = "parabench.engine.join"


def train(plan: RunPlan, node_rank: int = 0) -> None:
    """Train a checked plan with as many processes as its strategy needs (one: right here), once the workload has
    what its initialisation reads; node_rank > 0 joins node 0's multi-node run."""
    log.info(
        "%s@%s: strategy %s (%s), %d process(es) x %d thread(s), global batch %d, lr %g on %s",
        plan.role,
        plan.workload_name,
        plan.strategy_name,
        plan.strategy.summary,
        plan.processes,
        plan.threads,
        plan.global_batch,
        plan.lr,
        plan.machine.accelerator,
    )
    plan.workload.prefetch(plan.settings)
    os.environ[LAUNCHED_AT_ENV] = repr(time.time())  # the workers inherit it (time.time(): one clock for every process)
    if plan.distributed:
        run_plan_workers(plan, f"{plan.role}@{plan.workload_name}", node_rank=node_rank)
    else:
        train_worker(plan)


def run_plan_workers(plan: RunPlan, what: str, node_rank: int = 0) -> None:
    """Run the plan's workers in fresh processes (torchrun when distributed); they read the plan from a file."""
    rendezvous = rendezvous_of(plan, node_rank)
    if rendezvous is not None and node_rank == 0:
        log.warning(
            "%s: waiting up to %g s (hardware.join_timeout_s) at %s for %d other node(s); on each, in its "
            "copy of the project, run with K = 1 to %d:\n    %s",
            what,
            rendezvous.join_timeout_s,
            rendezvous.endpoint,
            rendezvous.nodes - 1,
            rendezvous.nodes - 1,
            join_command(plan),
        )
    with tempfile.TemporaryDirectory(prefix="parabench-plan-") as scratch:
        plan_file = Path(scratch) / "plan.json"
        plan.save(plan_file)
        processes = plan.processes_per_node if plan.distributed else None
        command = worker_command(WORKER_MODULE, [str(plan_file)], processes, plan.machine.max_restarts, rendezvous)
        run_workers(command, plan.threads, what, plan.machine.max_restarts)


def rendezvous_of(plan: RunPlan, node_rank: int) -> Rendezvous | None:
    """Where and how this node meets the others: only for a distributed plan over several nodes."""
    machine = plan.machine
    if not plan.distributed or machine.nodes == 1:
        return None
    assert machine.rendezvous is not None, "checked by the params schema"
    return Rendezvous(
        nodes=machine.nodes, node_rank=node_rank, endpoint=machine.rendezvous, join_timeout_s=machine.join_timeout_s
    )


def join_command(plan: RunPlan) -> str:
    """What each other node runs, in its copy of the project (same code, params.yaml and prepared data)."""
    return f"python -m {JOIN_MODULE} {plan.workload_name} --role {plan.role} --node-rank K"


def join(workload: str, role: Role, node_rank: int) -> None:
    """Join node 0's multi-node run of `role`@`workload` from node `node_rank`, planned from the local params.yaml
    exactly as node 0's stage plans it."""
    plan = make_plan(load_params(), workload, role)
    nodes = plan.machine.nodes
    if nodes == 1 or not plan.distributed:
        raise ConfigError(
            f"params.yaml: {role}@{workload} runs on one node here (hardware.nodes: {nodes}, "
            f"strategy {plan.strategy_name}); there is nothing to join. Set hardware.nodes as node 0 "
            "has it, with a strategy that runs under torchrun."
        )
    check_node_rank(node_rank, nodes)
    train(plan, node_rank=node_rank)
