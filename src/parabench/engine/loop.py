"""The one training loop: every strategy runs through it, with the same data, timing and checkpoints."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from parabench.engine import checkpoint
from parabench.engine.batches import shard_batches, steps_per_epoch, training_subset
from parabench.engine.distributed import Process, broadcast_buffers, sum_across, synchronize
from parabench.engine.evaluate import accuracy
from parabench.engine.plan import RunPlan
from parabench.engine.timing import StepClock
from parabench.workloads import LabelledImages


@dataclass
class TrainResult:
    """What a finished run leaves: the plain model, per-epoch rows and this process's kept step times."""

    model: nn.Module
    history: list[dict[str, float]]
    step_durations: list[float]
    steps_per_epoch: int
    resumed_after_epoch: int


def run_description(plan: RunPlan) -> dict[str, Any]:
    """Everything that shapes the run's epochs; runs with equal descriptions share checkpoints.

    `epochs` is left out on purpose: epoch k does the same work whatever the total (constant learning
    rate, data order seeded per epoch), so a longer run may continue a shorter one's checkpoint.
    """
    return {
        "workload": plan.workload.name,
        "strategy": plan.strategy.name,
        "processes": plan.processes,
        "replicas": plan.replicas,
        "global_batch": plan.global_batch,
        "lr": plan.lr,
        "settings": plan.settings.model_dump(exclude={"epochs"}),
    }


def fit(
    plan: RunPlan, process: Process, train: LabelledImages, test: LabelledImages, checkpoint_path: Path
) -> TrainResult:
    """Train for the planned epochs (resuming from a matching checkpoint) and test after each epoch."""
    settings, workload, device = plan.settings, plan.workload, process.device
    train = training_subset(train, settings.train_subset, settings.seed)
    torch.manual_seed(settings.seed)
    model = workload.build_model(settings)
    run_id = checkpoint.fingerprint(run_description(plan))
    saved = checkpoint.load(checkpoint_path, run_id, process)
    if saved:
        model.load_state_dict(saved["model"])
    parallel = plan.strategy.apply(model, process)
    optimizer = torch.optim.SGD(
        parallel.module.parameters(), lr=plan.lr, momentum=settings.momentum, weight_decay=settings.weight_decay
    )
    if saved:
        optimizer.load_state_dict(saved["optimizer"])
    history: list[dict[str, float]] = saved["history"] if saved else []
    clock = StepClock(device, settings.warmup_steps, kept=saved["durations"] if saved else None)
    steps = steps_per_epoch(len(train), plan.global_batch)
    for epoch in range(len(history), settings.epochs):
        parallel.module.train()
        kept_before = len(clock.durations)
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), device=device)
        seen = 0
        batches = shard_batches(
            len(train), plan.batch_per_replica, parallel.shard_index, parallel.shard_count, settings.seed, epoch
        )
        for indices in tqdm(batches, total=steps, desc=f"epoch {epoch + 1}/{settings.epochs}",
                            disable=None if process.is_main else True, leave=False):
            with clock.step():
                inputs = workload.to_inputs(train.images[indices].to(device, non_blocking=True))
                labels = train.labels[indices].to(device, non_blocking=True)
                optimizer.zero_grad(set_to_none=True)
                outputs = parallel.module(inputs)
                loss = workload.loss(outputs, labels)
                loss.backward()
                optimizer.step()
            loss_sum += loss.detach() * len(labels)
            correct += (outputs.detach().argmax(dim=1) == labels).sum()
            seen += len(labels)
        synchronize(device)
        epoch_durations = clock.durations[kept_before:]
        loss_total, correct_total, seen_total = sum_across([loss_sum.item(), correct.item(), float(seen)], device)
        broadcast_buffers(parallel.plain)
        test_acc = accuracy(
            parallel.plain, test, workload.to_inputs, settings.eval_batch_size, device,
            parallel.shard_index, parallel.shard_count,
        )
        history.append({
            "epoch": epoch + 1,
            "train_loss": loss_total / seen_total,
            "train_acc": correct_total / seen_total,
            "test_acc": test_acc,
            "step_time_s": sum(epoch_durations) / max(1, len(epoch_durations)),
            "samples_per_s": plan.global_batch * len(epoch_durations) / sum(epoch_durations)
            if epoch_durations else float("nan"),
        })
        if process.is_main:
            row = history[-1]
            tqdm.write(f"epoch {epoch + 1}: loss {row['train_loss']:.4f} train acc {row['train_acc']:.4f} "
                       f"test acc {test_acc:.4f} {row['samples_per_s']:.1f} samples/s")
            checkpoint.save(checkpoint_path, {
                "fingerprint": run_id, "epoch": epoch + 1, "model": parallel.plain.state_dict(),
                "optimizer": optimizer.state_dict(), "history": history, "durations": clock.durations,
            })
    return TrainResult(model=parallel.plain, history=history, step_durations=clock.durations, steps_per_epoch=steps,
                       resumed_after_epoch=saved["epoch"] if saved else 0)
