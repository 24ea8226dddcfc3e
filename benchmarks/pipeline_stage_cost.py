"""Benchmark: what a two-stage CPU pipeline can reach, from each stage's own cost per micro-batch.

    python benchmarks/pipeline_stage_cost.py [--image-size 48] [--batch 12] [--cut 4 2] [--repeats 5]

The distributed pipeline gives each stage one process with its share of the cores (1 thread of 2). This times,
in one process, each stage's forward + backward on a micro-batch of every size that divides the batch, at one
thread, and `single`'s step on the whole batch at two threads. With m micro-batches and S stages a GPipe or
1F1B step cannot beat (m + S - 1) x the slower stage's time per micro-batch, even with free communication and
perfect overlap; the table prints that bound beside `single`, so the sweep's measured curve can be read
against it: the gap between the bound and the sweep is what sending activations and the schedule cost. Each
figure is the median over `repeats` after one warm-up; the CPU model and vector ISA are printed first.
"""

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import Tensor, nn

from parabench.models.resnet50 import resnet50_blocks
from parabench.runtime.environment import machine_identity
from parabench.strategies.partition import cut


def median_seconds(work: Callable[[], None], repeats: int) -> float:
    """Median wall time of `work` over `repeats` runs after one warm-up run."""
    work()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def forward_backward(module: nn.Module, inputs: Tensor) -> Callable[[], None]:
    """One forward and backward of `module` on `inputs` (gradients flow back to the inputs, as in a pipeline)."""

    def work() -> None:
        leaf = inputs.detach().requires_grad_(True)
        module(leaf).sum().backward()

    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image-size", type=int, default=48)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--cut", type=int, nargs="+", default=[4, 2], help="blocks per stage (6 blocks in all)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    identity = machine_identity()
    print(f"{identity['cpu_model']} ({identity['cpu_capability']}), torch {identity['torch']}, "
          f"{args.image_size} px, batch {args.batch}, cut {args.cut}")
    torch.manual_seed(0)
    model = resnet50_blocks(1000)
    stages = cut(model, args.cut)
    batch = torch.randn(args.batch, 3, args.image_size, args.image_size)
    torch.set_num_threads(2)
    single = median_seconds(forward_backward(model, batch), args.repeats)
    torch.set_num_threads(1)
    print(f"single, 2 threads, whole batch: {single:.3f} s/step")
    print("split_size | micro-batches | " + " | ".join(f"stage {i} s/micro-batch" for i in range(len(stages)))
          + " | bound (m+S-1) x slower, s/step | best speedup vs single")
    for split_size in [size for size in range(1, args.batch + 1) if args.batch % size == 0]:
        micro_batches = args.batch // split_size
        activation, costs = batch[:split_size], []
        for stage in stages:
            costs.append(median_seconds(forward_backward(stage, activation), args.repeats))
            activation = stage(activation).detach()
        bound = (micro_batches + len(stages) - 1) * max(costs)
        print(f"{split_size} | {micro_batches} | " + " | ".join(f"{cost:.3f}" for cost in costs)
              + f" | {bound:.3f} | {single / bound:.2f}")


if __name__ == "__main__":
    main()
