"""One benchmark run: the training loop's pass, warm-up then timed steps of one strategy; rank 0 writes the times."""

import argparse
import itertools
from collections.abc import Iterator
from pathlib import Path

import torch

from parabench.cli import stage_main
from parabench.config import PARAMS_FILE, load_params
from parabench.engine import distributed
from parabench.engine.batches import shard_batches, training_subset
from parabench.engine.memory import memory_kind, peak_memory_mb
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.step import prepare
from parabench.engine.timing import StepClock
from parabench.engine.train_pass import train_pass
from parabench.io import write_json
from parabench.paths import prepared_dir


def endless_batches(plan: RunPlan, num_samples: int, shard_index: int, shard_count: int) -> Iterator[torch.Tensor]:
    """This process's share of each global batch, epoch after epoch, as training would draw them."""
    for epoch in itertools.count():
        yield from shard_batches(num_samples, plan.global_batch // shard_count, shard_index, shard_count,
                                 plan.settings.seed, epoch)


def run_bench_worker(workload_name: str, strategy_name: str, out: Path, params_path: Path) -> None:
    """Time `timed_steps` steps after `warmup_steps`; the slowest rank sets each step's time."""
    params = load_params(params_path)
    plan = make_plan(params, workload_name, "benchmark", strategy_name=strategy_name)
    torch.set_num_threads(plan.threads)
    process = distributed.start(plan.machine)
    try:
        train, _ = plan.workload.load_data(prepared_dir(plan.workload.dataset))
        train = training_subset(train, plan.settings.train_subset, plan.settings.seed)
        parallel, optimizer = prepare(plan, process)
        parallel.module.train()
        clock = StepClock(process.device, params.benchmark.warmup_steps)
        batches = endless_batches(plan, len(train), parallel.shard_index, parallel.shard_count)
        steps = params.benchmark.warmup_steps + params.benchmark.timed_steps
        train_pass(plan, parallel, optimizer, train, list(itertools.islice(batches, steps)), clock)
        per_rank = distributed.gather_objects(clock.durations)
        memory = distributed.gather_objects(peak_memory_mb(process.device))
        if process.is_main:
            write_json(out, {
                "step_durations": [max(step) for step in zip(*per_rank)],
                "peak_memory_mb": memory,
                "memory_kind": memory_kind(process.device),
                "strategy_details": parallel.details,
            })
    finally:
        distributed.stop()


def main() -> None:
    """Entry point of `python -m parabench.engine.bench_worker WORKLOAD STRATEGY OUT`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload")
    parser.add_argument("strategy")
    parser.add_argument("out", type=Path)
    parser.add_argument("--params", type=Path, default=PARAMS_FILE)
    args = parser.parse_args()
    run_bench_worker(args.workload, args.strategy, args.out, args.params)


if __name__ == "__main__":
    stage_main(main)
