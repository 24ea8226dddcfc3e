"""Benchmark: `ddp` and `allreduce` with 2 processes x 1 thread against `single` with 1 x 1, per batch size.

    python benchmarks/scaling.py [--batches 32 64 128 256] [--width 16] [--steps 30] [--warmup 3]

Weak scaling: each rank computes `batch` samples per step, as `single` does, so the scaling efficiency is
ddp samples/s / (2 x single samples/s) = single step time / ddp step time. Everything runs in lockstep inside
one torchrun job of 2 processes x 1 thread, through the training loop's own pass. Each step has four phases:
rank 0 takes a `single` step alone while rank 1 waits in a barrier (its core idle, as when `single` runs by
itself); both ranks take a `single` step side by side on models of their own, with no communication (the
ceiling: what two processes sharing this machine's cores, caches and memory can reach at best); both take a
`ddp` step (gradients all-reduced in buckets while backward runs); both take an `allreduce` step (the same
all-reduce after backward, no overlap). So noise on a shared machine hits all four alike, which runs in fresh
processes minutes apart (the benchmark stage's way) cannot promise. A two-process step lasts as long as its
slower rank. Efficiencies and the ceiling are medians over steps of the per-step ratios; efficiency / ceiling
is what communication costs.
"""

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import torch
import torch.distributed as dist
import yaml

from parabench.batch import Batch
from parabench.config import load_params
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.timing import StepClock
from parabench.engine.training import Trainer, build_trainer, shard_batches, train_pass
from parabench.io import read_json, write_json
from parabench.params_file import PARAMS_FILE
from parabench.paths import prepared_dir
from parabench.runtime.collectives import slowest_per_step
from parabench.runtime.process import start, stop

WORKLOAD = "fashion_mnist"


def params_for(batch: int, width: int) -> dict[str, Any]:
    """params.yaml, changed to 1 thread per process on 2 CPU devices, weak scaling at `batch` per process."""
    params: dict[str, Any] = yaml.safe_load(PARAMS_FILE.read_text())
    params["hardware"].update(accelerator="cpu", devices=2, threads=1)
    params["scales"][WORKLOAD][params["scale"]].update(batch_size=batch, width=width, scaling="weak")
    return params


PHASES = ["alone", "side_by_side", "ddp", "allreduce"]


class Phase(NamedTuple):
    """One phase's model as its strategy made it, with its optimiser, and its step clock."""

    plan: RunPlan
    trainer: Trainer
    clock: StepClock


def run_worker(params_path: Path, steps: int, warmup: int, out: Path) -> None:
    """Inside torchrun, per step: `single` on rank 0 alone, `single` on both ranks, `ddp`, then `allreduce`."""
    params = load_params(params_path)
    plans = {
        name: make_plan(params, WORKLOAD, "benchmark", strategy_name=strategy)
        for name, strategy in zip(PHASES, ["single", "single", "ddp", "allreduce"])
    }
    ddp_plan = plans["ddp"]
    torch.set_num_threads(ddp_plan.threads)
    process = start(ddp_plan.machine)
    try:
        data = ddp_plan.workload.open(prepared_dir("fashion_mnist"), ddp_plan.settings)
        batch, seed = ddp_plan.settings.batch_size, ddp_plan.settings.seed
        shard = [
            data.train_batch(0, chosen)
            for chosen in itertools.islice(
                shard_batches(data.train_units, batch, process.rank, process.world_size, seed, epoch=0), warmup + steps
            )
        ]
        whole = [
            data.train_batch(0, chosen)
            for chosen in itertools.islice(shard_batches(data.train_units, batch, 0, 1, seed, epoch=0), warmup + steps)
        ]
        phases = {
            name: Phase(plan, build_trainer(plan, process, warmup + steps), StepClock([process.device], warmup))
            for name, plan in plans.items()
            if name != "alone" or process.is_main
        }

        def step(name: str, one_batch: Batch) -> None:
            phase = phases[name]
            train_pass(phase.trainer, data, [one_batch], 1, phase.clock)

        for shard_batch, whole_batch in zip(shard, whole):
            if process.is_main:
                step("alone", whole_batch)
            for name in PHASES[1:]:
                dist.barrier()
                step(name, shard_batch)
        slowest = {name: slowest_per_step(phases[name].clock.durations) for name in PHASES[1:]}
        if process.is_main:
            write_json(out, {"alone": phases["alone"].clock.durations, **slowest})
    finally:
        stop()


def measure(batch: int, width: int, steps: int, warmup: int) -> dict[str, list[float]]:
    """Launch the 2-process lockstep job for one batch size; its step times."""
    with tempfile.TemporaryDirectory(prefix="parabench-scaling-") as scratch:
        params_path, out = Path(scratch) / "params.yaml", Path(scratch) / "steps.json"
        params_path.write_text(yaml.safe_dump(params_for(batch, width)))
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nnodes=1",
            "--nproc-per-node=2",
            __file__,
            "--worker",
            str(params_path),
            "--steps",
            str(steps),
            "--warmup",
            str(warmup),
            "--out",
            str(out),
        ]
        subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": "1"}, check=True)
        measured: dict[str, list[float]] = read_json(out)
        return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30, help="timed steps per batch size")
    parser.add_argument("--warmup", type=int, default=3, help="steps left out of the timing")
    parser.add_argument("--worker", type=Path, metavar="PARAMS", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        run_worker(args.worker, args.steps, args.warmup, args.out)
        return
    rows = []
    for batch in args.batches:
        times = measure(batch, args.width, args.steps, args.warmup)
        rates = {name: (batch if name == "alone" else 2 * batch) / statistics.median(times[name]) for name in PHASES}
        ratios = {name: [alone / other for alone, other in zip(times["alone"], times[name])] for name in PHASES[1:]}
        ceiling, ddp, allreduce = (statistics.median(ratios[name]) for name in PHASES[1:])
        quartiles = statistics.quantiles(ratios["ddp"], n=4)
        rows.append(
            f"{batch:10d}  {rates['alone']:10.1f}  {rates['side_by_side']:10.1f}  {rates['ddp']:7.1f}  "
            f"{rates['allreduce']:13.1f}  {ceiling:7.3f}  {ddp:14.3f} ({quartiles[0]:.3f}-{quartiles[2]:.3f})"
            f"  {allreduce:20.3f}"
        )
    print(
        f"torch {torch.__version__}, width {args.width}, {args.steps} timed steps ({args.warmup} warm-up), "
        "in lockstep; samples/s from median step times"
    )
    print(
        "batch/rank  single 1x1  2 x single  ddp 2x1  allreduce 2x1  ceiling  ddp efficiency (p25-p75)  "
        "allreduce efficiency"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
