"""Benchmark: the engine's training step against a bare PyTorch loop, same model and batch, under `single` and `ddp`.

    python benchmarks/loop_overhead.py [--strategies single ddp] [--width 64] [--batch 128] [--steps 5]
                                       [--warmup 2] [--rounds 3]

Each strategy is planned from params.yaml for fashion_mnist on the CPU (its scale's settings, schedule included;
the batch and the ResNet's width from the flags) with the threads its plan gives: `single` one process with the
node's cores, `ddp` 2 ranks over gloo with a core each, the global batch shared among them. The engine's side is
the engine's own pass (`train_pass` over the batches a benchmark cell draws: the step clock, the batch to the
device, the transform, the strategy's step, the update and the schedule, the loss and tally totals, the progress
bar); the bare side is a second copy of the same seeded model (under `ddp` in its own bare
`DistributedDataParallel`): zero_grad, forward, cross-entropy, backward, step, and the schedule's step, nothing
else. The two run in lockstep in each process: every batch goes through one bare step and one engine step, the
bare one first on even steps and second on odd ones (bare, engine, engine, bare, ...), so both see the same
batches in the same order and noise on this machine hits them alike. Each engine iteration is timed whole, from
one request for a batch to the next (the pass's own work between steps counts). A step lasts as long as its
slowest rank. Each round builds both models afresh and leaves its warm-up steps out. The figure is the median of
the per-step ratios of samples/s, engine / bare, with their quartiles and each round's median (goal: >= 0.99
under both strategies). Both models must end with the same parameters: the two loops did the same computation.
"""

import argparse
import itertools
import os
import socket
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.multiprocessing.spawn import spawn
from torch.nn import functional as F
from torch.nn.parallel import DistributedDataParallel

from parabench.batch import Batch
from parabench.config import validate_params, with_overrides
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.timed_cell import endless_batches
from parabench.engine.timing import StepClock
from parabench.engine.training import build_trainer, shard_of, steps_per_epoch, train_pass
from parabench.io import read_json, write_json
from parabench.params_file import read_raw_params
from parabench.runtime.collectives import gather_objects
from parabench.runtime.process import Process
from parabench.workloads import WorkloadData

WORKLOAD = "fashion_mnist"
CPU_RANKS = 2  # ddp's processes: one per core of a 2-core machine, as the benchmark stage plans them


def compared_plan(strategy: str, batch: int, width: int) -> RunPlan:
    """params.yaml's benchmark plan of `strategy` for fashion_mnist on the CPU, with this benchmark's batch and
    width."""
    raw = read_raw_params()
    scale = f"scales.{WORKLOAD}.{raw['scale']}"
    overrides = {
        "hardware.accelerator": "cpu",
        "hardware.devices": CPU_RANKS,
        "hardware.nodes": 1,
        "hardware.threads": "auto",
        f"{scale}.batch_size": batch,
        f"{scale}.width": width,
    }
    params = validate_params(with_overrides(raw, overrides), f"params.yaml with {overrides}")
    return make_plan(params, WORKLOAD, "benchmark", strategy_name=strategy)


def timed(step: Callable[[Batch], None], batch: Batch) -> float:
    """Seconds `step` takes on `batch`."""
    started = time.perf_counter()
    step(batch)
    return time.perf_counter() - started


class Lockstep:
    """The engine's batches, each also run through one bare step, before the engine's loop receives it on even steps
    and after the engine's step on odd ones (bare, engine, engine, bare, ...: a drift of the machine's speed hits
    both alike); both timed."""

    def __init__(self, batches: Sequence[Batch], bare_step: Callable[[Batch], None]):
        self.batches = batches
        self.bare_step = bare_step
        self.engine: list[float] = []
        self.bare: list[float] = []

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Batch]:
        for index, batch in enumerate(self.batches):
            if index % 2 == 0:
                self.bare.append(timed(self.bare_step, batch))
            started = time.perf_counter()
            yield batch
            self.engine.append(time.perf_counter() - started)
            if index % 2 == 1:
                self.bare.append(timed(self.bare_step, batch))


def bare_loop(plan: RunPlan, process: Process, steps: int) -> tuple[nn.Module, Callable[[Batch], None]]:
    """The plan's model, optimiser and schedule over epochs of `steps` steps, built by the workload and seeded as the
    engine builds them, and a hand-written step around them (the model in a bare DDP when the process has peers)."""
    workload, settings = plan.workload, plan.settings
    torch.manual_seed(settings.seed)
    model = workload.build_model(settings)
    module = DistributedDataParallel(model) if process.world_size > 1 else model
    optimizer = workload.optimizer([{"params": list(model.parameters()), "lr": plan.lr}], settings)
    schedule = workload.lr_schedule(optimizer, settings, steps)

    def step(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(module(batch.inputs.float().div_(255.0)), batch.targets).backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()

    return model, step


@dataclass(frozen=True)
class Round:
    """One lockstep pass: each timed step's seconds on either side, and how far the two models' parameters ended
    apart."""

    engine: list[float]
    bare: list[float]
    difference: float


def run_round(plan: RunPlan, process: Process, data: WorkloadData, warmup: int, timed_steps: int) -> Round:
    """One lockstep pass of `warmup + timed_steps` batches with fresh models, warm-up left out."""
    steps = steps_per_epoch(data.train_units, plan.global_batch)
    trainer = build_trainer(plan, process, steps)
    trainer.parallel.module.train()
    bare_model, bare_step = bare_loop(plan, process, steps)
    shard_index, shard_count = shard_of(plan, trainer.parallel, process)
    batches = list(itertools.islice(endless_batches(data, plan, shard_index, shard_count), warmup + timed_steps))
    lockstep = Lockstep(batches, bare_step)
    train_pass(
        trainer,
        data,
        lockstep,
        len(batches),
        StepClock(trainer.parallel.devices, warmup),
        progress=f"engine under {plan.strategy_name}" if process.is_main else None,
    )
    difference = max(
        (ours - bare).abs().max().item()
        for ours, bare in zip(trainer.parallel.model.parameters(), bare_model.parameters(), strict=True)
    )
    return Round(lockstep.engine[warmup:], lockstep.bare[warmup:], difference)


def slowest(rounds_of_ranks: list[list[Round]]) -> list[Round]:
    """Every round with each step as long as its slowest rank, and the largest difference of any rank."""
    return [
        Round(
            [max(times) for times in zip(*(part.engine for part in parts))],
            [max(times) for times in zip(*(part.bare for part in parts))],
            max(part.difference for part in parts),
        )
        for parts in zip(*rounds_of_ranks)
    ]


def run_rank(rank: int, world_size: int, plan: RunPlan, warmup: int, timed_steps: int, rounds: int, out: Path) -> None:
    """This rank's lockstep rounds, at the plan's threads; rank 0 writes every round's slowest steps to `out`."""
    torch.set_num_threads(plan.threads)
    process = Process(rank=rank, local_rank=rank, world_size=world_size, device=torch.device("cpu"))
    data = plan.open_data()
    mine = [run_round(plan, process, data, warmup, timed_steps) for _ in range(rounds)]
    every_rank = gather_objects(mine)
    if process.is_main:
        write_json(out, [asdict(part) for part in slowest(every_rank)])


def gloo_rank(
    rank: int, world_size: int, port: int, plan: RunPlan, warmup: int, timed_steps: int, rounds: int, out: Path
) -> None:
    """One spawned rank: join the others over gloo on this host, run the rounds, leave."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        run_rank(rank, world_size, plan, warmup, timed_steps, rounds, out)
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def measure(plan: RunPlan, warmup: int, timed_steps: int, rounds: int) -> list[Round]:
    """The plan's lockstep rounds: in this process for one process, else in spawned ranks joined over gloo."""
    with tempfile.TemporaryDirectory(prefix="loop-overhead-") as scratch:
        out = Path(scratch) / "rounds.json"
        if plan.processes == 1:
            run_rank(0, 1, plan, warmup, timed_steps, rounds, out)
        else:
            spawn(
                gloo_rank,
                args=(plan.processes, free_port(), plan, warmup, timed_steps, rounds, out),
                nprocs=plan.processes,
                join=True,
            )
        return [Round(**part) for part in read_json(out)]


def report(plan: RunPlan, rounds: list[Round]) -> None:
    """Print samples/s on either side, the engine / bare ratio (median, quartiles, per round) and the largest
    parameter difference."""
    engine = [t for part in rounds for t in part.engine]
    bare = [t for part in rounds for t in part.bare]
    ratios = [b / e for e, b in zip(engine, bare, strict=True)]
    quartiles = statistics.quantiles(ratios, n=4)
    per_round = [statistics.median(b / e for e, b in zip(part.engine, part.bare, strict=True)) for part in rounds]
    print(
        f"{plan.strategy_name}: {plan.processes} process(es) x {plan.threads} thread(s), "
        f"{plan.global_batch // plan.replicas} images per rank per step"
    )
    print(
        f"  engine: {plan.global_batch / statistics.median(engine):.1f} samples/s (median step "
        f"{statistics.median(engine):.3f} s)"
    )
    print(
        f"  bare:   {plan.global_batch / statistics.median(bare):.1f} samples/s (median step "
        f"{statistics.median(bare):.3f} s)"
    )
    print(
        f"  engine / bare: {statistics.median(ratios):.3f} (steps p25-p75 {quartiles[0]:.3f}-{quartiles[2]:.3f}; "
        f"rounds {', '.join(f'{ratio:.3f}' for ratio in per_round)})"
    )
    print(
        f"  largest parameter difference between the two models: {max(part.difference for part in rounds):.2e}",
        flush=True,
    )


def main() -> None:
    """Plan each strategy, run its lockstep rounds and report them."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strategies", nargs="+", choices=["single", "ddp"], default=["single", "ddp"])
    parser.add_argument("--batch", type=int, default=128, help="global batch (shared by ddp's ranks)")
    parser.add_argument("--width", type=int, default=64, help="channels of the ResNet's first stage")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=2, help="steps per round left out of its time")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"width {args.width}, global batch {args.batch}, {args.rounds} rounds x {args.steps} timed steps "
        f"({args.warmup} warm-up), engine and bare in lockstep"
    )
    for strategy in args.strategies:
        plan = compared_plan(strategy, args.batch, args.width)
        report(plan, measure(plan, args.warmup, args.steps, args.rounds))


if __name__ == "__main__":
    main()
