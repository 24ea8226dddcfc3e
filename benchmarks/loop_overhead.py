"""Benchmark: parabench's training step (strategy `single`) against a bare PyTorch loop, same model, batch, threads.

    python benchmarks/loop_overhead.py [--threads 2] [--batch 128] [--width 16] [--steps 30] [--rounds 5]

Both loops run in this process on the same prepared Fashion-MNIST batches, alternating which goes first in
each round; the
figure is the ratio of median samples/s (goal: parabench >= 0.98x the bare loop).
"""

import argparse
import dataclasses
import statistics
import time

import torch
from torch.nn import functional as F

from parabench.config import Hardware, load_params
from parabench.engine.distributed import start
from parabench.engine.hardware import resolve
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.step import optimizer_step, prepare
from parabench.engine.timing import StepClock
from parabench.models.resnet import d2l_resnet18
from parabench.paths import prepared_dir
from parabench.workloads import WORKLOADS

CPU_HARDWARE = Hardware(accelerator="cpu", devices=1, nodes=1, threads="auto", backend="auto", max_restarts=0)


def parabench_plan(batch: int, width: int) -> RunPlan:
    """params.yaml's `single` plan for Fashion-MNIST on the CPU, with this benchmark's batch and width."""
    plan = make_plan(load_params(), "fashion_mnist", "benchmark", resolve(CPU_HARDWARE), strategy_name="single")
    settings = plan.settings.model_copy(update={"batch_size": batch, "width": width, "lr": 0.1, "momentum": 0.0,
                                                "weight_decay": 0.0})
    return dataclasses.replace(plan, settings=settings, global_batch=batch, lr=0.1)


def time_parabench(plan: RunPlan, batches: list[tuple[torch.Tensor, torch.Tensor]], warmup: int) -> list[float]:
    process = start(plan.machine)
    parallel, optimizer = prepare(plan, process)
    clock = StepClock(process.device, warmup)
    for images, labels in batches:
        with clock.step():
            optimizer_step(plan, parallel, optimizer, images, labels)
    return clock.durations


def time_bare(width: int, batches: list[tuple[torch.Tensor, torch.Tensor]], warmup: int) -> list[float]:
    torch.manual_seed(0)
    model = d2l_resnet18(10, in_channels=1, width=width)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    durations = []
    for images, labels in batches:
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(images.float().div_(255.0)), labels).backward()
        optimizer.step()
        durations.append(time.perf_counter() - start)
    return durations[warmup:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    train, _ = WORKLOADS["fashion_mnist"].load_data(prepared_dir("fashion_mnist"))
    batches = [(train.images[i : i + args.batch], train.labels[i : i + args.batch])
               for i in range(0, (args.steps + args.warmup) * args.batch, args.batch)]
    plan = parabench_plan(args.batch, args.width)
    ours, bare = [], []
    for round_index in range(args.rounds):
        runs = [lambda: ours.extend(time_parabench(plan, batches, args.warmup)),
                lambda: bare.extend(time_bare(args.width, batches, args.warmup))]
        for run in runs if round_index % 2 == 0 else reversed(runs):
            run()
    ours_rate, bare_rate = args.batch / statistics.median(ours), args.batch / statistics.median(bare)
    print(f"threads {args.threads}, batch {args.batch}, width {args.width}, {args.rounds} rounds x {args.steps} steps")
    print(f"parabench single: {ours_rate:.1f} samples/s (median step {statistics.median(ours) * 1e3:.1f} ms)")
    print(f"bare PyTorch:     {bare_rate:.1f} samples/s (median step {statistics.median(bare) * 1e3:.1f} ms)")
    print(f"ratio parabench / bare: {ours_rate / bare_rate:.3f}")


if __name__ == "__main__":
    main()
