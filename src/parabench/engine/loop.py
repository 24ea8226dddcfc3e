"""The one training loop: every strategy runs through it, with the same data, timing and checkpoints."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor
from tqdm import tqdm

from parabench.engine import checkpoint
from parabench.engine.batches import shard_batches, steps_per_epoch, training_subset
from parabench.engine.distributed import Process, broadcast_object, gather_objects, sum_across
from parabench.engine.evaluate import accuracy
from parabench.engine.plan import RunPlan
from parabench.engine.step import prepare
from parabench.engine.timing import StepClock
from parabench.engine.train_pass import train_pass
from parabench.workloads import LabelledImages


@dataclass
class TrainResult:
    """What a finished run leaves: the model's state (on rank 0), per-epoch rows and kept step times."""

    state_dict: dict[str, Tensor]
    history: list[dict[str, float]]
    step_durations: list[float]
    steps_per_epoch: int
    resumed_after_epoch: int
    strategy_details: dict[str, Any]


def run_description(plan: RunPlan) -> dict[str, Any]:
    """Everything that shapes the run's epochs and their timings; runs with equal descriptions share checkpoints.

    `epochs` is left out on purpose: epoch k does the same work whatever the total (constant learning
    rate, data order seeded per epoch), so a longer run may continue a shorter one's checkpoint. The machine
    is in: a resumed run keeps the step times of its checkpoint, which must have been measured alike.
    """
    machine = plan.machine
    return {
        **plan.describe(),
        "machine": {"accelerator": machine.accelerator, "backend": machine.backend, "cores": machine.cores,
                    "threads": plan.threads},
        "settings": plan.settings.model_dump(exclude={"epochs"}),
        **{section: getattr(plan.setup, section).model_dump() for section in plan.strategy.options},
    }


def fit(
    plan: RunPlan, process: Process, train: LabelledImages, test: LabelledImages, checkpoint_path: Path
) -> TrainResult:
    """Train for the planned epochs (resuming from a matching checkpoint) and test after each epoch."""
    settings = plan.settings
    train = training_subset(train, settings.train_subset, settings.seed)
    run_id = checkpoint.fingerprint(run_description(plan))
    saved = checkpoint.load(checkpoint_path, run_id, process)
    parallel, optimizer = prepare(plan, process, saved["model"] if saved else None)
    if saved:
        optimizer.load_state_dict(saved["optimizers"][process.rank])
    history: list[dict[str, float]] = saved["history"] if saved else []
    clock = StepClock(process.device, settings.warmup_steps, kept=saved["durations"] if saved else None)
    steps = steps_per_epoch(len(train), plan.global_batch)
    state: dict[str, Tensor] | None = None  # full_state_dict() may return {} off rank 0
    for epoch in range(len(history), settings.epochs):
        parallel.module.train()
        kept_before = len(clock.durations)
        batches = list(shard_batches(
            len(train), plan.global_batch // parallel.shard_count, parallel.shard_index, parallel.shard_count,
            settings.seed, epoch
        ))
        totals = train_pass(plan, parallel, optimizer, train, batches, clock,
                            progress=f"epoch {epoch + 1}/{settings.epochs}" if process.is_main else None)
        epoch_durations = clock.durations[kept_before:]
        loss_total, correct_total, seen_total = sum_across(totals, process.device)
        state = parallel.full_state_dict()
        test_acc = broadcast_object(_test_accuracy(plan, state, test, process) if process.is_main else None)
        history.append({
            "epoch": epoch + 1,
            "train_loss": loss_total / seen_total,
            "train_acc": correct_total / seen_total,
            "test_acc": test_acc,
            "step_time_s": sum(epoch_durations) / max(1, len(epoch_durations)),
            "samples_per_s": plan.global_batch * len(epoch_durations) / sum(epoch_durations)
            if epoch_durations else float("nan"),
        })
        optimizers = gather_objects(optimizer.state_dict())
        if process.is_main:
            row = history[-1]
            tqdm.write(f"epoch {epoch + 1}: loss {row['train_loss']:.4f} train acc {row['train_acc']:.4f} "
                       f"test acc {test_acc:.4f} {row['samples_per_s']:.1f} samples/s")
            checkpoint.save(checkpoint_path, {
                "fingerprint": run_id, "epoch": epoch + 1, "model": state, "optimizers": optimizers,
                "history": history, "durations": clock.durations,
            })
    if state is None:
        state = parallel.full_state_dict()
    return TrainResult(state_dict=state, history=history, step_durations=clock.durations, steps_per_epoch=steps,
                       resumed_after_epoch=saved["epoch"] if saved else 0, strategy_details=dict(parallel.details))


def _test_accuracy(plan: RunPlan, state: dict[str, Tensor], test: LabelledImages, process: Process) -> float:
    """Accuracy of the whole model, rebuilt from its state on this process's device (rank 0 only)."""
    model = plan.workload.build_model(plan.settings)
    model.load_state_dict(state)
    model.to(process.device)
    return accuracy(model, test, plan.workload.to_inputs, plan.settings.eval_batch_size, process.device)
