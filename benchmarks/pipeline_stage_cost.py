"""Benchmark: where a two-stage CPU pipeline's step goes, from each stage's own cost per micro-batch.

    python benchmarks/pipeline_stage_cost.py [--image-size 48] [--batch 12] [--cut 3 3] [--splits 1 3 12]
                                             [--repeats 5] [--measured results/sweep/split_size.json]

The distributed pipeline gives each stage one process with its share of the cores (1 thread of 2). This times, in
one process, ResNet-50's training step (forward, backward, SGD update) on the whole batch at 2 threads and at 1
(`single` at 2 threads is the reference; their ratio is what intra-op threading already gets from the second core),
then each stage's forward + backward + update on one micro-batch of every split size, at 1 thread, and the whole
model's on the same micro-batch at 1 thread and at 2 (how the cost per image changes with the micro-batch; m times
the 2-thread figure bounds from above what `single` would take accumulating gradients over the same m micro-batches,
a variant of single that no strategy here runs: it counts m updates, not one). With m micro-batches and S stages, a
GPipe or 1F1B step cannot beat m x the slowest stage + the other stages' time per micro-batch even with free
communication ((m + S - 1) x a stage for equal stages); that bound splits into the work shared evenly (m x the mean
stage), the imbalance (m x (slowest - mean)) and the bubble (the other stages' time):
report.time_split.pipeline_bound, the same split every benchmark cell of a pipeline now reports. Given a sweep's
results (`--measured`), each distributed curve's median step is set beside the bound: what is left over is sending
activations and gradients, the schedule's own work and the contention of the processes. Each figure is the median
over `repeats` after one warm-up; the CPU model and vector ISA are printed first.
"""

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.models.torchvision_resnet50 import resnet50_blocks
from parabench.records import CellFigures, SweepResults
from parabench.runtime.environment import machine_identity
from parabench.strategies.cost import pipeline_bound
from parabench.strategies.partition import cut

CLASSES = 1000


def median_seconds(work: Callable[[], None], repeats: int) -> float:
    """Median wall time of `work` over `repeats` runs after one warm-up run."""
    work()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def training_step(module: nn.Module, inputs: Tensor, last: bool) -> Callable[[], None]:
    """One forward, backward and SGD update of `module` on `inputs`: against one-hot targets (MSE, as the workload
    trains) when it ends the model, else with a gradient flowing back to its inputs, as a middle stage gets."""
    optimizer = torch.optim.SGD(module.parameters(), lr=0.001)
    targets = F.one_hot(torch.arange(len(inputs)) % CLASSES, CLASSES).float()

    def work() -> None:
        optimizer.zero_grad(set_to_none=True)
        leaf = inputs.detach().requires_grad_(True)
        outputs = module(leaf)
        (F.mse_loss(outputs, targets) if last else outputs.sum()).backward()
        optimizer.step()

    return work


def measured_steps(path: Path) -> dict[tuple[str, int], tuple[float, list[int]]]:
    """(curve, split size) -> the median step time and the cut of each distributed cell that ran, from a sweep's
    results file."""
    results = SweepResults.model_validate_json(path.read_text())
    return {
        (cell.curve, cell.value): (cell.figures.step_time_s.median, cell.figures.strategy_details["cut"])
        for cell in results.cells
        if isinstance(cell.figures, CellFigures) and cell.figures.strategy_details.get("engine") == "distributed"
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image-size", type=int, default=48)
    parser.add_argument("--batch", type=int, default=12)
    parser.add_argument("--cut", type=int, nargs="+", default=[3, 3], help="blocks per stage (6 blocks in all)")
    parser.add_argument("--splits", type=int, nargs="+", help="micro-batch sizes (default: every divisor of batch)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--measured", type=Path, help="a sweep's results/sweep/<name>.json to set beside the bound")
    args = parser.parse_args()
    identity = machine_identity()
    print(
        f"{identity['cpu_model']} ({identity['cpu_capability']}), torch {identity['torch']}, "
        f"{args.image_size} px, batch {args.batch}, cut {args.cut}"
    )
    torch.manual_seed(0)
    model = resnet50_blocks(CLASSES)
    stages = cut(model, args.cut)
    batch = torch.randn(args.batch, 3, args.image_size, args.image_size)
    single = {}
    for threads in (2, 1):
        torch.set_num_threads(threads)
        single[threads] = median_seconds(training_step(model, batch, last=True), args.repeats)
    print(
        f"single on the whole batch: {single[2]:.3f} s/step at 2 threads, {single[1]:.3f} s at 1 "
        f"(threading gets {single[1] / single[2]:.2f}x from the second core)"
    )
    measured = measured_steps(args.measured) if args.measured else {}
    curves = sorted({curve for curve, _ in measured})
    print(
        "split | m | whole model s/micro-batch at 1 thread, at 2 (x m: single accumulating) | "
        + " | ".join(f"stage {index} s/micro-batch" for index in range(len(stages)))
        + " | bound s/step = even work + imbalance + bubble | bound speedup vs single"
        + "".join(f" | {curve}: measured s/step (left over; its cut)" for curve in curves)
    )
    for split_size in args.splits or [size for size in range(1, args.batch + 1) if args.batch % size == 0]:
        micro_batches, activation = args.batch // split_size, batch[:split_size]
        whole = {}
        for threads in (2, 1):
            torch.set_num_threads(threads)
            whole[threads] = median_seconds(training_step(model, activation, last=True), args.repeats)
        torch.set_num_threads(1)
        costs = []
        for index, stage in enumerate(stages):
            costs.append(median_seconds(training_step(stage, activation, last=index == len(stages) - 1), args.repeats))
            activation = stage(activation).detach()
        even, imbalance, bubble = pipeline_bound(costs, micro_batches).values()
        bound = even + imbalance + bubble
        row = (
            f"{split_size} | {micro_batches} | {whole[1]:.3f}, {whole[2]:.3f} ({micro_batches * whole[2]:.3f}) | "
            + " | ".join(f"{cost:.3f}" for cost in costs)
            + f" | {bound:.3f} = {even:.3f} + {imbalance:.3f} + {bubble:.3f} | {single[2] / bound:.2f}"
        )
        for curve in curves:
            step, cell_cut = measured.get((curve, split_size), (None, None))
            row += f" | {step:.3f} ({step - bound:+.3f}; {cell_cut})" if step is not None else " | -"
        print(row)


if __name__ == "__main__":
    main()
