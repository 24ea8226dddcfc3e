"""One benchmark cell in its worker: the training loop's pass for warm-up then timed steps; rank 0 writes the times."""

import itertools
import statistics
from collections.abc import Iterator
from pathlib import Path

import torch

from parabench.batch import Batch
from parabench.engine.batches import epoch_batches, steps_per_epoch
from parabench.engine.loop import shard_of
from parabench.engine.plan import RunPlan
from parabench.engine.timing import StepClock
from parabench.engine.train_pass import train_pass
from parabench.engine.trainer import build_trainer
from parabench.io import write_json
from parabench.runtime import load
from parabench.runtime.collectives import gather_objects, slowest_per_step
from parabench.runtime.memory import StepMemory, memory_kind, per_rank
from parabench.runtime.process import Process
from parabench.workloads import WorkloadData


def endless_batches(data: WorkloadData, plan: RunPlan, shard_index: int, shard_count: int) -> Iterator[Batch]:
    """This process's share of each global batch, epoch after epoch, as training would draw them."""
    for epoch in itertools.count():
        yield from epoch_batches(data, plan.global_batch, shard_index, shard_count, plan.settings.seed, epoch)


def transform_rate(data: WorkloadData, batches: list[Batch], device: torch.device, warmup: int) -> float:
    """Units per second of the workload's transform alone (decode, normalise, augment) on this process's device."""
    clock = StepClock([device], warmup)
    for batch in batches:
        with clock.step():
            data.transform(batch.to(device))
    return len(batches[-1]) / statistics.median(clock.durations)


def measure_cell(plan: RunPlan, process: Process, data: WorkloadData, warmup: int, timed: int, out: Path) -> None:
    """Time `timed` steps after `warmup`; a step lasts as long as its slowest rank. Before them, time the
    transform alone on the same batches (where this process reads the inputs; rank 0 always does): whether the
    input path could starve training. Peak memory counts the steps alone, the model's setup left out."""
    trainer = build_trainer(plan, process, steps_per_epoch(data.train_units, plan.global_batch))
    trainer.parallel.module.train()
    shard_index, shard_count = shard_of(plan, trainer.parallel, process)
    clock, memory = StepClock(trainer.parallel.devices, warmup), StepMemory(trainer.parallel.devices)
    batches = list(itertools.islice(endless_batches(data, plan, shard_index, shard_count), warmup + timed))
    input_rate = (transform_rate(data, batches, trainer.parallel.input_device, warmup)
                  if trainer.parallel.reads_inputs else None)
    started = load.mark()
    memory.reset()
    train_pass(trainer, data, batches, warmup + timed, clock,
               progress=f"benchmark: {plan.strategy_name} on {plan.workload_name}" if process.is_main else None)
    memory.read()
    others = load.job_other_cpu_share(started, load.mark())
    durations = slowest_per_step(clock.durations)
    peaks = per_rank(gather_objects(memory.peaks_mb))  # type: ignore[arg-type]
    if process.is_main:
        write_json(out, {
            "unit": data.unit,
            "step_durations": durations,
            "peak_memory_mb": peaks,
            "memory_kind": memory_kind(process.device),
            "other_cpu_share": others,
            "transform_units_per_s": input_rate,
            "strategy_details": trainer.parallel.details,
        })
