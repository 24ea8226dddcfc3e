"""Benchmark: parabench's training loop (strategy `single`) against a bare PyTorch loop, same model, batch, threads.

    python benchmarks/loop_overhead.py [--threads 2] [--batch 128] [--width 16] [--steps 25] [--rounds 6]

parabench's side is the training loop's own pass (`train_pass`: indexing, the strategy's step, the step clock,
the loss and accuracy totals, the progress bar); the bare side is zero_grad, forward, cross-entropy, backward
and step, nothing else, on a second copy of the same seeded model. The two run in lockstep in this process: each
time parabench's loop asks for its next batch, the bare loop first takes one step on that batch. So both see the
same batches in the same order, noise on this machine hits them alike, and each parabench iteration is timed
whole, from one request for a batch to the next (the loop's own work between steps counts). On the CPU no device
queue hides work from the clock. Each round builds both models afresh and leaves its warm-up steps out. The
figure is the median of the per-step ratios of samples/s, with their quartiles and the lowest and highest
round's median (goal: parabench >= 0.98x the bare loop). Both models must end with the same parameters: the
two loops did the same computation.
"""

import argparse
import statistics
import time
from collections.abc import Callable, Iterator, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.config import load_params
from parabench.engine.batches import shard_batches
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.timing import StepClock
from parabench.engine.train_pass import train_pass
from parabench.engine.trainer import build_trainer
from parabench.models.resnet import d2l_resnet18
from parabench.paths import prepared_dir
from parabench.runtime.hardware import Hardware, resolve
from parabench.runtime.process import start
from parabench.workloads import WorkloadData

CPU_HARDWARE = Hardware(accelerator="cpu", devices=1, nodes=1, threads="auto", backend="auto", max_restarts=0,
                        oversubscribe=False)


def parabench_plan(batch: int, width: int) -> RunPlan:
    """params.yaml's `single` plan for Fashion-MNIST on the CPU, with this benchmark's batch and width."""
    plan = make_plan(load_params(), "fashion_mnist", "benchmark", strategy_name="single", machine=resolve(CPU_HARDWARE))
    settings = plan.settings.model_copy(update={"batch_size": batch, "width": width, "lr": 0.1, "momentum": 0.0,
                                                "weight_decay": 0.0})
    return plan.model_copy(update={"settings": settings, "global_batch": batch, "lr": 0.1})


class Lockstep:
    """parabench's batches, with one bare step run on each before parabench's loop receives it; both timed."""

    def __init__(self, batches: Sequence[Batch], bare_step: Callable[[Batch], None]):
        self.batches = batches
        self.bare_step = bare_step
        self.ours: list[float] = []
        self.bare: list[float] = []

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Batch]:
        ours_started = None
        for batch in self.batches:
            bare_started = time.perf_counter()
            if ours_started is not None:
                self.ours.append(bare_started - ours_started)
            self.bare_step(batch)
            ours_started = time.perf_counter()
            self.bare.append(ours_started - bare_started)
            yield batch
        if ours_started is not None:
            self.ours.append(time.perf_counter() - ours_started)


def bare_loop_step(model: nn.Module) -> Callable[[Batch], None]:
    """The hand-written step around `model`: SGD at lr 0.1, as the parabench plan trains."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(batch.inputs.float().div_(255.0)), batch.targets).backward()
        optimizer.step()

    return step


def run_round(plan: RunPlan, data: WorkloadData, batches: Sequence[Batch], warmup: int) -> tuple[Lockstep, float]:
    """One lockstep pass with fresh models; returns the step times and how far the two models' parameters differ."""
    process = start(plan.machine)
    trainer = build_trainer(plan, process, len(batches))
    trainer.parallel.module.train()
    torch.manual_seed(plan.settings.seed)
    bare_model = d2l_resnet18(10, in_channels=1, width=plan.settings.width)
    lockstep = Lockstep(batches, bare_loop_step(bare_model))
    train_pass(trainer, data, lockstep, len(batches), StepClock(process.device, warmup), progress="parabench")
    lockstep.ours, lockstep.bare = lockstep.ours[warmup:], lockstep.bare[warmup:]
    difference = max((ours - bare).abs().max().item()
                     for ours, bare in zip(trainer.parallel.module.parameters(), bare_model.parameters()))
    return lockstep, difference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--steps", type=int, default=25, help="timed steps per pass")
    parser.add_argument("--warmup", type=int, default=3, help="steps per pass left out of its time")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    plan = parabench_plan(args.batch, args.width)
    data = plan.workload.open(prepared_dir("fashion_mnist"), plan.settings)
    indices = list(shard_batches(data.train_units, args.batch, 0, 1, seed=0, epoch=0))[: args.warmup + args.steps]
    batches = [data.train_batch(0, chosen) for chosen in indices]
    rounds = [run_round(plan, data, batches, args.warmup) for _ in range(args.rounds)]
    ours = [t for lockstep, _ in rounds for t in lockstep.ours]
    bare = [t for lockstep, _ in rounds for t in lockstep.bare]
    ratios = [b / o for o, b in zip(ours, bare)]
    quartiles = statistics.quantiles(ratios, n=4)
    round_ratios = [statistics.median(lockstep.bare) / statistics.median(lockstep.ours) for lockstep, _ in rounds]
    print(f"threads {args.threads}, batch {args.batch}, width {args.width}, "
          f"{args.rounds} rounds x {args.steps} timed steps ({args.warmup} warm-up), in lockstep")
    print(f"parabench single: {args.batch / statistics.median(ours):.1f} samples/s (median step)")
    print(f"bare PyTorch:     {args.batch / statistics.median(bare):.1f} samples/s (median step)")
    print(f"ratio parabench / bare: {statistics.median(ratios):.3f} (steps p25-p75 {quartiles[0]:.3f}-"
          f"{quartiles[2]:.3f}; rounds {min(round_ratios):.3f}-{max(round_ratios):.3f})")
    print(f"largest parameter difference between the two models: {max(d for _, d in rounds):.2e}")


if __name__ == "__main__":
    main()
