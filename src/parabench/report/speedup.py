"""The run against its reference: speedup, scaling efficiency, the quality metrics of both, and how sure the timing is.

End to end, `speedup` compares two runs timed minutes (or experiments) apart; on a shared machine other work
can distort either. `speedup_interleaved_robust` is the same ratio from the benchmark stage, where both strategies
ran in fresh processes in alternating rounds so that noise hit them alike: it is the robust figure.
"""

from typing import Any

from parabench.data.origin import origin_summary
from parabench.report.benchmark import REFERENCE
from parabench.stats import in_words

INTERLEAVED_NOTE = (
    "speedup compares train and reference runs timed apart (end to end); speedup_interleaved_robust is the same ratio "
    "from the benchmark stage's interleaved rounds, robust to machine noise; contended: other programs took more "
    "than 10% of the CPU while a run was timed, so trust speedup_interleaved_robust."
)


def interleaved_speedup(benchmark: dict[str, dict[str, Any]] | None, strategy: str, reference: str) -> float | None:
    """The benchmark's rate of `strategy` over that of `reference`, when both ran there."""
    if benchmark is None:
        return None
    run, ref = benchmark.get(strategy, {}), benchmark.get(reference, {})
    if run.get("status") != "ran" or ref.get("status") != "ran":
        return None
    return run["rate"] / ref["rate"]


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
        "contended": run["contended"] or reference["contended"],
        **run["labels"],
        "data_origin": origin_summary(run["data_origin"]),
    }


def details(run: dict[str, Any], reference: dict[str, Any], evaluation: dict[str, Any]) -> dict[str, Any]:
    """What the compact comparison leaves out: how to read it, both runs' times, scores, load and environments."""
    return {
        "note": INTERLEAVED_NOTE,
        "quality": in_words(evaluation["paired"], run["strategy"], reference["strategy"])
        if "paired" in evaluation else None,
        "data_origin": run["data_origin"],
        "train_time_s": {"run": run["train_time_s"], "reference": reference["train_time_s"]},
        "devices": run["devices"],
        "evaluation": evaluation,
        "benchmark_reference": REFERENCE,
        "load": {role: {"other_cpu_share": record["other_cpu_share"], "load_average_1m": record["load_average_1m"]}
                 for role, record in (("run", run), ("reference", reference))},
        "environment": {"run": run["environment"], "reference": reference["environment"]},
    }
