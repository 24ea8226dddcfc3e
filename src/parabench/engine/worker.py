"""One training process: join the job, train, and (rank 0) write the results; torchrun starts N of these."""

import argparse

import torch

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine import distributed
from parabench.engine.loop import fit
from parabench.engine.memory import memory_kind, peak_memory_mb
from parabench.engine.outputs import summary, write_run
from parabench.engine.plan import make_plan
from parabench.paths import checkpoint_file, prepared_dir


def run_worker(workload_name: str, role: str) -> None:
    """Train `workload_name` for `role` in this process, as one rank of the job."""
    plan = make_plan(load_params(), workload_name, role)
    torch.set_num_threads(plan.threads)
    process = distributed.start(plan.machine)
    try:
        train, test = plan.workload.load_data(prepared_dir(plan.workload.dataset))
        result = fit(plan, process, train, test, checkpoint_file(role, workload_name))
        per_rank_durations = distributed.gather_objects(result.step_durations)
        slowest_rank_per_step = [max(step) for step in zip(*per_rank_durations)]
        memory = distributed.gather_objects(peak_memory_mb(process.device))
        if process.is_main:
            metrics = summary(plan, result, slowest_rank_per_step, memory, memory_kind(process.device))
            write_run(plan, result, metrics)
    finally:
        distributed.stop()


def main() -> None:
    """Entry point of `python -m parabench.engine.worker WORKLOAD ROLE`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload")
    parser.add_argument("role", choices=("train", "reference"))
    args = parser.parse_args()
    run_worker(args.workload, args.role)


if __name__ == "__main__":
    stage_main(main)
