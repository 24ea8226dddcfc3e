"""A training worker's life: it joins its job, checks that every node agrees, trains the plan its launcher
(engine/launch.py) saved, and rank 0 writes what it measured (records.RunRecord). Benchmark cells run in warm
workers: engine/cell_worker.py.

    python -m parabench.engine.worker PLAN.json
"""

import argparse
import hashlib
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import torch

from parabench.cli import stage_main
from parabench.engine import checkpoint
from parabench.engine.plan import RunPlan
from parabench.engine.timing import summarize
from parabench.engine.training import TrainResult, fit
from parabench.errors import RunStopped
from parabench.io import write_atomic, write_json
from parabench.paths import checkpoint_file, model_file, results_file, train_curve_file
from parabench.records import RunRecord
from parabench.runtime.collectives import gather_objects, slowest_per_step
from parabench.runtime.environment import describe
from parabench.runtime.load import CONTENDED_SHARE, load_average
from parabench.runtime.memory import memory_kind, per_rank
from parabench.runtime.orphans import die_with_parent
from parabench.runtime.process import Process, restart_count, start, stop
from parabench.runtime.torchrun import LAUNCHED_AT_ENV
from parabench.workloads import WorkloadData

NOT_SCORES = ("epoch", "step_time_s", "other_cpu_share")


@contextmanager
def job(plan: RunPlan) -> Iterator[Process]:
    """Set the plan's threads and seed, join the job's process group (under torchrun), leave it when the body ends.

    Only a body that succeeded leaves the group. An exception propagates with the group still joined: since torch
    2.6 destroy_process_group may block on a group with a failed or pending collective (an out-of-memory error
    mid-step), so destroying it first could hang the process before it prints why it failed. The process prints
    the error and exits instead; the OS and torchrun clean up after it.

    Inside, a step's time is that of the slowest process (runtime.collectives.slowest_per_step).
    """
    torch.set_num_threads(plan.threads)
    torch.manual_seed(plan.settings.seed)
    process = start(plan.machine)
    yield process
    stop()


def run_digest(plan: RunPlan) -> str:
    """The run as planned, less what may differ between nodes (their cores): workload, strategy, batch, settings."""
    run = {
        "run": plan.describe().model_dump(),
        "scale": plan.scale,
        "settings": plan.settings.model_dump(),
        "setup": plan.setup.model_dump(exclude={"machine"}),
    }
    return hashlib.sha256(json.dumps(run, sort_keys=True, default=str).encode()).hexdigest()[:16]


def check_nodes_agree(plan: RunPlan, process: Process, data_id: str) -> list[str]:
    """Each node's first process reports its host and its plan and data digests; if they differ, every rank stops,
    naming the nodes and what differs, before any training. The nodes' hosts, in node order (one node: its own)."""
    if plan.machine.nodes == 1:
        return [socket.gethostname()]
    first_on_node = process.local_rank == 0
    mine = {
        "node": os.environ.get("GROUP_RANK", "?"),
        "host": socket.gethostname(),
        "plan": run_digest(plan) if first_on_node else None,
        "data": data_id if first_on_node else None,
    }
    reports = [report for report in gather_objects(mine) if report["plan"] is not None]
    node_0 = reports[0]
    for what, differs, fix in (
        ("plan", "planned another run", "the same params.yaml and code"),
        ("data", "holds other prepared data", "the same prepared data"),
    ):
        differ = [f"node {report['node']} on {report['host']}" for report in reports if report[what] != node_0[what]]
        if differ:
            raise RunStopped(
                f"{', '.join(differ)} {differs} than node 0 on {node_0['host']} ({what} digest "
                f"{node_0[what]} on node 0); give every node {fix} (docs/gpus-and-nodes.md: Several nodes) and run "
                "again."
            )
    return [str(report["host"]) for report in reports]  # in rank order: torchrun numbers the ranks node by node


def train_worker(plan: RunPlan) -> None:
    """Train the plan in this process, as one rank of its job; rank 0 writes the results."""
    with job(plan) as process:
        data_id = plan.data_identity() if process.local_rank == 0 else "read by local rank 0"
        hosts = check_nodes_agree(plan, process, data_id)
        data = plan.open_data()
        result = fit(plan, process, data, checkpoint_file(plan.role, plan.workload_name), data_id)
        steps = slowest_per_step(result.step_durations)
        memory = per_rank(gather_objects(result.peak_memory_mb))
        if process.is_main:
            write_run(
                plan,
                result,
                run_record(plan, data, result, steps, memory, memory_kind(process.device), since_launch(), hosts),
            )


def since_launch() -> float | None:
    """Seconds since the stage launched this job (start-up, every step, evaluation and checkpoints included), when
    a stage did ($PARABENCH_LAUNCHED_AT)."""
    launched = os.environ.get(LAUNCHED_AT_ENV)
    return time.time() - float(launched) if launched else None


def run_record(
    plan: RunPlan,
    data: WorkloadData,
    result: TrainResult,
    step_durations: list[float],
    memory_mb: dict[str, float],
    memory_kind: str,
    wall_time_s: float | None,
    node_hosts: list[str],
) -> RunRecord:
    """Everything measured about one run (`memory_mb`: the peak of its training steps per rank and device;
    `node_hosts`: each node's host, in node order; each field is described in records.RunRecord). train_time_s is
    the time the planned steps take at the median step (warm-up excluded, the slowest rank's), so two strategies
    doing the same work compare fairly; wall_time_s, the whole job from its launch: what a user waits for; an
    epoch's other_cpu_share above CONTENDED_SHARE marks the timing contended."""
    steps = summarize(step_durations)
    last = result.history[-1]
    shares = [share for row in result.history if (share := row.get("other_cpu_share")) is not None]
    busiest = max(shares) if shares else None
    return RunRecord(
        **plan.describe().model_dump(),
        scale=plan.scale,
        unit=data.unit,
        data_origin=data.data_origin,
        data_provenance=data.provenance,
        data_digest=result.data_id,
        labels=plan.workload.choices_beside_metrics(plan.settings),
        epochs=plan.settings.epochs,
        train_time_s=steps.median * result.steps_per_epoch * plan.settings.epochs,
        wall_time_s=wall_time_s,
        units_per_s=plan.global_batch / steps.median,
        step_time_s=steps,
        step_durations=step_durations,
        final_epoch={key: value for key, value in last.items() if key not in NOT_SCORES},
        peak_memory_mb=memory_mb,
        memory_kind=memory_kind,
        other_cpu_share=busiest,
        contended=busiest is not None and busiest > CONTENDED_SHARE,
        load_average_1m=load_average(),
        resumed_after_epoch=result.resumed_after_epoch,
        restarts=restart_count(),
        strategy_details=result.strategy_details,
        environment={
            **describe(plan.machine, plan.processes, plan.threads, plan.distributed),
            "node_hosts": node_hosts,
        },
    )


def write_run(plan: RunPlan, result: TrainResult, record: RunRecord) -> None:
    """Save the weights, the run's record and its per-epoch CSV."""
    role, name = plan.role, plan.workload_name
    checkpoint.write_tensors(model_file(role, name), result.state_dict)
    write_json(results_file(role, name), record.model_dump(mode="json"))
    curves = pd.DataFrame(result.history)
    write_atomic(train_curve_file(role, name), lambda tmp: curves.to_csv(tmp, index=False, float_format="%.6g"))


def main() -> None:
    """Entry point of the worker processes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", type=Path)
    die_with_parent()
    train_worker(RunPlan.load(parser.parse_args().plan))


if __name__ == "__main__":
    stage_main(main)
