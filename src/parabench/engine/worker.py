"""A worker process: it reads the plan its launcher wrote, then trains it or measures one benchmark cell.

    python -m parabench.engine.worker PLAN.json [--out CELL.json --warmup W --steps T]
"""

import argparse
import os
import time
from pathlib import Path

from parabench.cli import stage_main
from parabench.engine.job import job
from parabench.engine.loop import fit
from parabench.engine.measure import measure_cell
from parabench.engine.node_agreement import check_nodes_agree
from parabench.engine.outputs import run_record, write_run
from parabench.engine.plan import RunPlan
from parabench.io import tree_digest
from parabench.paths import checkpoint_file, prepared_dir
from parabench.runtime.collectives import gather_objects, slowest_per_step
from parabench.runtime.launch import LAUNCHED_AT_ENV
from parabench.runtime.memory import memory_kind, per_rank
from parabench.workloads import WorkloadData


def prepared_folder(plan: RunPlan) -> Path | None:
    """The prepared dataset folder the plan reads (None when its workload draws its own data)."""
    return prepared_dir(plan.dataset) if plan.dataset else None


def data_identity(plan: RunPlan) -> str:
    """A digest of the bytes the run trains on: its prepared folder, or the file that draws its synthetic data."""
    folder = prepared_folder(plan)
    if folder is not None:
        return tree_digest(folder)
    assert plan.workload.generator_file is not None, "a workload without a dataset names the file that draws its data"
    return tree_digest(Path(plan.workload.generator_file))


def open_data(plan: RunPlan) -> WorkloadData:
    """The plan's workload data, from its prepared folder (none for synthetic workloads)."""
    return plan.workload.open(prepared_folder(plan), plan.settings)


def train_worker(plan: RunPlan) -> None:
    """Train the plan in this process, as one rank of its job; rank 0 writes the results."""
    with job(plan) as process:
        data_id = data_identity(plan) if process.local_rank == 0 else "read by local rank 0"
        check_nodes_agree(plan, process, data_id)
        data = open_data(plan)
        result = fit(plan, process, data, checkpoint_file(plan.role, plan.workload_name), data_id)
        steps = slowest_per_step(result.step_durations)
        memory = per_rank(gather_objects(result.peak_memory_mb))  # type: ignore[arg-type]
        if process.is_main:
            write_run(plan, result, run_record(plan, data, result, steps, memory, memory_kind(process.device),
                                               since_launch()))


def since_launch() -> float | None:
    """Seconds since the stage launched this job (start-up, every step, evaluation and checkpoints included), when
    a stage did ($PARABENCH_LAUNCHED_AT)."""
    launched = os.environ.get(LAUNCHED_AT_ENV)
    return time.time() - float(launched) if launched else None


def main() -> None:
    """Entry point of the worker processes."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", type=Path)
    parser.add_argument("--out", type=Path, help="benchmark cells: where rank 0 writes the step times")
    parser.add_argument("--warmup", type=int, default=0, help="benchmark cells: steps left out of the timing")
    parser.add_argument("--steps", type=int, default=0, help="benchmark cells: timed steps")
    args = parser.parse_args()
    plan = RunPlan.load(args.plan)
    if plan.role == "benchmark":
        with job(plan) as process:
            measure_cell(plan, process, open_data(plan), args.warmup, args.steps, args.out)
    else:
        train_worker(plan)


if __name__ == "__main__":
    stage_main(main)
