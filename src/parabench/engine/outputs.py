"""Write a training run's results: weights, a metrics summary and per-epoch curves, each atomically."""

from typing import Any

import pandas as pd
import torch

from parabench.engine.environment import describe
from parabench.engine.loop import TrainResult
from parabench.engine.plan import RunPlan
from parabench.engine.timing import summarize
from parabench.io import write_atomic, write_json
from parabench.paths import model_file, train_curve_file, train_metrics_file


def summary(plan: RunPlan, result: TrainResult, step_durations: list[float], memory_mb: list[float],
            memory_kind: str) -> dict[str, Any]:
    """The run's metrics.

    samples_per_s is the global batch over the median step time (warm-up excluded); train_time_s is the
    time the planned steps take at that median rate, so two strategies doing the same work compare fairly.
    """
    steps = summarize(step_durations)
    last = result.history[-1]
    return {
        **plan.describe(),
        "epochs": plan.settings.epochs,
        "train_time_s": steps["median"] * result.steps_per_epoch * plan.settings.epochs,
        "samples_per_s": plan.global_batch / steps["median"],
        "step_time_s": steps,
        "test_acc": last["test_acc"],
        "train_acc": last["train_acc"],
        "train_loss": last["train_loss"],
        "peak_memory_mb": {f"rank{rank}": round(mb, 1) for rank, mb in enumerate(memory_mb)},
        "memory_kind": memory_kind,
        "resumed_after_epoch": result.resumed_after_epoch,
        "strategy_details": result.strategy_details,
        "environment": describe(plan),
    }


def write_run(plan: RunPlan, result: TrainResult, metrics: dict[str, Any]) -> None:
    """Save the weights, the metrics JSON and the per-epoch CSV of one role."""
    role, name = plan.role, plan.workload.name
    write_atomic(model_file(role, name), lambda tmp: torch.save(result.state_dict, tmp))
    write_json(train_metrics_file(role, name), metrics)
    curves = pd.DataFrame(result.history)
    write_atomic(train_curve_file(role, name), lambda tmp: curves.to_csv(tmp, index=False, float_format="%.6g"))
