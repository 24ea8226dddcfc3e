"""A training run's results: weights, the full record (environment, memory, load, details), per-epoch curves."""

from typing import Any

import pandas as pd
import torch

from parabench.engine.loop import TrainResult
from parabench.engine.plan import RunPlan
from parabench.engine.timing import summarize
from parabench.io import write_atomic, write_json
from parabench.paths import model_file, results_file, train_curve_file
from parabench.runtime.environment import describe
from parabench.runtime.load import CONTENDED_SHARE, load_average
from parabench.runtime.process import restart_count
from parabench.workloads import WorkloadData

NOT_SCORES = ("epoch", "step_time_s", "other_cpu_share")


def run_record(plan: RunPlan, data: WorkloadData, result: TrainResult, step_durations: list[float],
               memory_mb: dict[str, float], memory_kind: str, wall_time_s: float | None) -> dict[str, Any]:
    """Everything measured about one run (`memory_mb`: the peak of its training steps per rank and device).

    `{unit}s_per_s` is the global batch over the median step time (warm-up excluded, the slowest rank's time
    per step); train_time_s is the time the planned steps take at that median, so two strategies doing the
    same work compare fairly. wall_time_s is the whole job from its launch, start-up, evaluation after every epoch
    and checkpoints included: what a user waits for (only the epochs trained now, after a resume).
    other_cpu_share is the largest share of the machine's CPU that other programs took during an epoch; above
    CONTENDED_SHARE the timing is marked contended.
    """
    steps = summarize(step_durations)
    last = result.history[-1]
    shares = [row["other_cpu_share"] for row in result.history if row.get("other_cpu_share") is not None]
    busiest = max(shares) if shares else None
    return {
        **plan.describe(),
        "scale": plan.scale,
        "unit": data.unit,
        "data_origin": data.data_origin,
        "data_digest": result.data_id,
        "labels": plan.workload.labels(plan.settings),
        "epochs": plan.settings.epochs,
        "train_time_s": steps["median"] * result.steps_per_epoch * plan.settings.epochs,
        "wall_time_s": wall_time_s,
        f"{data.unit}s_per_s": plan.global_batch / steps["median"],
        "step_time_s": steps,
        "final_epoch": {key: value for key, value in last.items() if key not in NOT_SCORES},
        "peak_memory_mb": memory_mb,
        "memory_kind": memory_kind,
        "other_cpu_share": busiest,
        "contended": busiest is not None and busiest > CONTENDED_SHARE,
        "load_average_1m": load_average(),
        "resumed_after_epoch": result.resumed_after_epoch,
        "restarts": restart_count(),
        "strategy_details": result.strategy_details,
        "environment": describe(plan.machine, plan.processes, plan.threads, plan.distributed),
    }


def write_run(plan: RunPlan, result: TrainResult, record: dict[str, Any]) -> None:
    """Save the weights, the run's record and its per-epoch CSV."""
    role, name = plan.role, plan.workload_name
    write_atomic(model_file(role, name), lambda tmp: torch.save(result.state_dict, tmp))
    write_json(results_file(role, name), record)
    curves = pd.DataFrame(result.history)
    write_atomic(train_curve_file(role, name), lambda tmp: curves.to_csv(tmp, index=False, float_format="%.6g"))
