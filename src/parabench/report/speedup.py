"""The run against its reference: three speedups, scaling efficiency, the quality of both and its paired difference.

`speedup` is the ratio of the two training runs' median steps; they ran minutes (or experiments) apart, so other
work or a slower spell of a shared machine can distort either. `speedup_interleaved_robust` is the same ratio from
the benchmark stage, where both strategies ran in fresh processes in alternating rounds so that noise hit them
alike: it is the robust figure for the step itself. `speedup_end_to_end` is the ratio of the two jobs' wall
times from launch to the last checkpoint: what a user waits for, start-up (torchrun, process group) and the
evaluation after each epoch included.
"""

from typing import Any

from parabench.data.provenance import Provenance
from parabench.data.registry import origin_summary
from parabench.report.benchmark import REFERENCE
from parabench.stats import in_words
from parabench.workloads import WORKLOADS

DRAWN = "synthetic: drawn from the run's seed, no dataset"
INTERLEAVED_NOTE = (
    "speedup: the reference's median training step over the run's, each from its whole training run, timed minutes "
    "apart; speedup_interleaved_robust: the same ratio from the benchmark stage's interleaved rounds, robust to "
    "machine noise (trust it for the step when the two differ); speedup_end_to_end: the reference job's wall time "
    "over the run's, start-up and evaluation included; contended: other programs took more than 10% of the CPU "
    "while a run was timed."
)


def interleaved_speedup(benchmark: dict[str, dict[str, Any]] | None, strategy: str, reference: str) -> float | None:
    """The benchmark's rate of `strategy` over that of `reference`, when both ran there."""
    if benchmark is None:
        return None
    run, ref = benchmark.get(strategy, {}), benchmark.get(reference, {})
    if run.get("status") != "ran" or ref.get("status") != "ran":
        return None
    return run["rate"] / ref["rate"]


def end_to_end_speedup(run: dict[str, Any], reference: dict[str, Any]) -> float | None:
    """The reference job's wall time over the run's; None when either resumed from a checkpoint (it did not run
    end to end) or was not launched by a stage."""
    timed = [record for record in (run, reference)
             if record.get("wall_time_s") is not None and not record.get("resumed_after_epoch")]
    return reference["wall_time_s"] / run["wall_time_s"] if len(timed) == 2 else None


def data_summary(run: dict[str, Any]) -> str:
    """What a run's data is, short enough for the table, rendered from its provenance record (another dataset's
    than the workload's own: real pixels of it); a run with no record read no prepared dataset: its data was drawn
    from its seed (results/ keep its data_origin sentence)."""
    record = run.get("data_provenance")
    if record is None:
        return DRAWN
    summary = origin_summary(Provenance.model_validate(record))
    return summary if WORKLOADS[run["workload"]].dataset == record["dataset"] else f"real pixels of {summary}"


def compare(run: dict[str, Any], reference: dict[str, Any], evaluation: dict[str, Any],
            benchmark: dict[str, dict[str, Any]] | None, primary_metric: str | None) -> dict[str, Any]:
    """The compact comparison `dvc metrics show` prints: speedup = reference train time / train time,
    scaling_efficiency = speedup / the run's devices, the run's evaluation scores, and the workload's primary
    metric for the reference and as a paired difference on the same test items with its 95% interval half-width
    (the reference's other scores and times are in results/; they would make the table too wide to read)."""
    speedup = reference["train_time_s"] / run["train_time_s"]
    rate = f"{run['unit']}s_per_s"
    quality = {}
    if primary_metric is not None:
        paired = evaluation["paired"]
        quality = {f"reference_{primary_metric}": evaluation["reference"][primary_metric],
                   f"{primary_metric}_delta": paired["delta"],
                   f"{primary_metric}_delta_ci95": (paired["ci95_high"] - paired["ci95_low"]) / 2}
    return {
        "strategy": run["strategy"],
        "reference": reference["strategy"],
        **evaluation["train"],
        **quality,
        rate: run[rate],
        "train_time_s": run["train_time_s"],
        "speedup": speedup,
        "scaling_efficiency": speedup / run["devices"],
        "speedup_interleaved_robust": interleaved_speedup(benchmark, run["strategy"], reference["strategy"]),
        "speedup_end_to_end": end_to_end_speedup(run, reference),
        "contended": run["contended"] or reference["contended"],
        **run["labels"],
        "data_origin": data_summary(run),
    }


def details(run: dict[str, Any], reference: dict[str, Any], evaluation: dict[str, Any]) -> dict[str, Any]:
    """What the compact comparison leaves out: how to read it, both runs' times, scores, load and environments."""
    return {
        "note": INTERLEAVED_NOTE,
        "quality": in_words(evaluation["paired"], run["strategy"], reference["strategy"])
        if "paired" in evaluation else None,
        "data_origin": run["data_origin"],
        "train_time_s": {"run": run["train_time_s"], "reference": reference["train_time_s"]},
        "wall_time_s": {"run": run.get("wall_time_s"), "reference": reference.get("wall_time_s")},
        "devices": run["devices"],
        "evaluation": evaluation,
        "benchmark_reference": REFERENCE,
        "load": {role: {"other_cpu_share": record["other_cpu_share"], "load_average_1m": record["load_average_1m"]}
                 for role, record in (("run", run), ("reference", reference))},
        "environment": {"run": run["environment"], "reference": reference["environment"]},
    }
