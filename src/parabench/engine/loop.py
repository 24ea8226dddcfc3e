"""The one training loop: every strategy and workload runs through it, with the same data, timing and checkpoints."""

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from tqdm import tqdm

from parabench.engine import checkpoint
from parabench.engine.batches import epoch_batches, steps_per_epoch
from parabench.engine.plan import RunPlan
from parabench.engine.timing import StepClock
from parabench.engine.train_pass import PassTotals, StepFailed, train_pass
from parabench.engine.trainer import build_trainer
from parabench.errors import ConfigError, RunStopped
from parabench.runtime import load
from parabench.runtime.collectives import broadcast_object, gather_objects, gather_to_main, on_cpu
from parabench.runtime.launch import PROGRESS_ENV
from parabench.runtime.memory import StepMemory
from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized
from parabench.workloads import WorkloadData


@dataclass
class TrainResult:
    """What a finished run leaves: the model's state (on rank 0), per-epoch rows and kept step times."""

    state_dict: dict[str, Tensor]
    history: list[dict[str, float]]
    step_durations: list[float]
    steps_per_epoch: int
    resumed_after_epoch: int
    strategy_details: dict[str, Any]
    data_id: str
    peak_memory_mb: dict[str, float]


def shard_of(plan: RunPlan, parallel: Parallelized, process: Process) -> tuple[int, int]:
    """Which share of every global batch this process trains on, and among how many shares.

    Independent side-by-side copies (plan.copies > 1) each take their rank's share, as replicas would.
    """
    if plan.copies > 1:
        return process.rank, plan.copies
    return parallel.shard_index, parallel.shard_count


def evaluate_state(plan: RunPlan, data: WorkloadData, state: dict[str, Tensor], split: str,
                   device: torch.device) -> dict[str, float]:
    """The workload's scores of the whole plain model, rebuilt from its state on `device`. On a CPU, with the
    threads of the node's every process: the others wait for the scores meanwhile."""
    model = plan.workload.build_model(plan.settings)
    model.load_state_dict(state)
    torch.set_num_threads(plan.machine.threads_per_process(1))
    try:
        return data.evaluate(model.to(device), split, device)
    finally:
        torch.set_num_threads(plan.threads)


def progress_note(process: Process, epoch: int, epochs: int, steps: int) -> Callable[[int], None] | None:
    """On rank 0, when the launcher asked for it ($PARABENCH_PROGRESS_FILE), a note of the last finished step, so
    that a failed job can say where it was even when no worker lived to say it."""
    path = os.environ.get(PROGRESS_ENV)
    if not process.is_main or not path:
        return None
    return lambda step: Path(path).write_text(f"epoch {epoch} of {epochs}, step {step} of {steps}")


def fit(plan: RunPlan, process: Process, data: WorkloadData, checkpoint_path: Path, data_id: str) -> TrainResult:
    """Train for the planned epochs (resuming from the checkpoint of this run on the same data, `data_id` a digest
    of what it reads), scoring after each epoch."""
    settings = plan.settings
    steps = steps_per_epoch(data.train_units, plan.global_batch)
    if steps == 0:
        raise ConfigError(
            f"scales.{plan.workload_name}.{plan.scale}: the training data holds {data.train_units} units, fewer than "
            f"one global batch of {plan.global_batch}; lower batch_size (or use scaling: strong) or train on more data."
        )
    run_id = checkpoint.fingerprint(checkpoint.run_description(plan))
    saved = checkpoint.load(checkpoint_path, run_id, data_id, process)
    trainer = build_trainer(plan, process, steps, saved["model"] if saved else None)
    if saved:
        trainer.optimizer.load_state_dict(saved["optimizers"][process.rank])
        if trainer.schedule is not None:
            trainer.schedule.load_state_dict(saved["schedules"][process.rank])
    history: list[dict[str, float]] = saved["history"] if saved else []
    clock = StepClock(trainer.parallel.devices, settings.warmup_steps, kept=saved["durations"] if saved else None)
    memory = StepMemory(trainer.parallel.devices)
    shard_index, shard_count = shard_of(plan, trainer.parallel, process)
    state: dict[str, Tensor] | None = None  # full_state_dict() may return {} off rank 0
    for epoch in range(len(history), settings.epochs):
        trainer.parallel.module.train()
        kept_before = len(clock.durations)
        started = load.mark()
        memory.reset()
        try:
            totals = train_pass(
                trainer, data, epoch_batches(data, plan.global_batch, shard_index, shard_count, settings.seed, epoch),
                steps, clock,
                progress=f"epoch {epoch + 1}/{settings.epochs}" if process.is_main else None,
                after_step=progress_note(process, epoch + 1, settings.epochs, steps),
            )
        except StepFailed as failed:
            raise RunStopped(f"rank {process.rank} stopped at epoch {epoch + 1} {failed}; the last checkpoint "
                             f"holds epoch {epoch} of {settings.epochs}") from failed.error
        machine_load = load.job_other_cpu_share(started, load.mark())
        memory.read()
        totals = PassTotals.combine(gather_objects(totals))  # type: ignore[arg-type]
        state = trainer.parallel.full_state_dict()
        scores = broadcast_object(
            evaluate_state(plan, data, state, data.epoch_split, process.device) if process.is_main else None)
        epoch_durations = clock.durations[kept_before:]
        history.append({
            "epoch": epoch + 1,
            **totals.means(),
            **scores,  # type: ignore[dict-item]
            "step_time_s": sum(epoch_durations) / max(1, len(epoch_durations)),
            "units_per_s": plan.global_batch * len(epoch_durations) / sum(epoch_durations)
            if epoch_durations else float("nan"),
            "other_cpu_share": machine_load,
        })
        optimizers = gather_to_main(on_cpu(trainer.optimizer.state_dict()))
        schedules = gather_to_main(on_cpu(trainer.schedule.state_dict() if trainer.schedule is not None else None))
        if process.is_main:
            tqdm.write(f"epoch {epoch + 1}: " + ", ".join(f"{key} {value:.4g}" for key, value in history[-1].items()
                                                           if key != "epoch" and value is not None))
            checkpoint.save(checkpoint_path, {
                "fingerprint": run_id, "data": data_id, "epoch": epoch + 1, "model": state, "optimizers": optimizers,
                "schedules": schedules, "history": history, "durations": clock.durations,
            })
    if state is None:
        state = trainer.parallel.full_state_dict()
    return TrainResult(state_dict=state, history=history, step_durations=clock.durations, steps_per_epoch=steps,
                       resumed_after_epoch=saved["epoch"] if saved else 0,
                       strategy_details=dict(trainer.parallel.details), data_id=data_id,
                       peak_memory_mb=memory.peaks_mb)
