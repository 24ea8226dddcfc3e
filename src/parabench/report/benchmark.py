"""Benchmark results per strategy: median samples/s with its spread over rounds, speedup, efficiency, memory."""

import statistics
from typing import Any

import pandas as pd

from parabench.engine.benchmark import StrategyRuns
from parabench.engine.environment import describe
from parabench.engine.timing import summarize

REFERENCE = "single"


def strategy_result(entry: StrategyRuns) -> dict[str, Any]:
    """One strategy's figures: a median over every timed step of every round, and the rounds' extremes."""
    if entry.plan is None:
        return {"status": "skipped", "reason": entry.skipped_reason}
    plan = entry.plan
    steps = [duration for run in entry.runs for duration in run["step_durations"]]
    per_round = [plan.global_batch / statistics.median(run["step_durations"]) for run in entry.runs]
    ranks = zip(*(run["peak_memory_mb"] for run in entry.runs))
    devices = plan.strategy.devices(plan.setup)
    return {
        "status": "ran",
        "samples_per_s": plan.global_batch / statistics.median(steps),
        "samples_per_s_min": min(per_round),
        "samples_per_s_max": max(per_round),
        "step_time_s": summarize(steps),
        "rounds": len(entry.runs),
        "global_batch": plan.global_batch,
        "processes": plan.processes,
        "devices": devices,
        "devices_virtual": plan.machine.accelerator == "cpu" and devices > 1,
        "peak_memory_mb": {f"rank{rank}": round(max(values), 1) for rank, values in enumerate(ranks)},
        "memory_kind": entry.runs[-1]["memory_kind"],
        "strategy_details": entry.runs[-1]["strategy_details"],
        "environment": describe(plan),
    }


def summarize_benchmark(entries: list[StrategyRuns]) -> dict[str, dict[str, dict[str, Any]]]:
    """workload -> strategy -> figures, with speedup and scaling efficiency against `single`."""
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        results.setdefault(entry.workload, {})[entry.strategy] = strategy_result(entry)
    for by_strategy in results.values():
        reference = by_strategy.get(REFERENCE, {})
        for figures in by_strategy.values():
            if figures["status"] != "ran":
                continue
            if reference.get("status") == "ran":
                figures["speedup"] = figures["samples_per_s"] / reference["samples_per_s"]
                figures["scaling_efficiency"] = figures["speedup"] / figures["devices"]
            else:
                figures["speedup"] = figures["scaling_efficiency"] = None
    return results


def table(results: dict[str, dict[str, dict[str, Any]]]) -> pd.DataFrame:
    """One row per strategy that ran, for `dvc plots` and the figure."""
    rows = [
        {
            "workload": workload,
            "strategy": strategy,
            "samples_per_s": figures["samples_per_s"],
            "samples_per_s_min": figures["samples_per_s_min"],
            "samples_per_s_max": figures["samples_per_s_max"],
            "speedup": figures["speedup"],
            "scaling_efficiency": figures["scaling_efficiency"],
            "devices": figures["devices"],
            "devices_virtual": figures["devices_virtual"],
        }
        for workload, by_strategy in results.items()
        for strategy, figures in by_strategy.items()
        if figures["status"] == "ran"
    ]
    return pd.DataFrame(rows)


def skipped(results: dict[str, dict[str, dict[str, Any]]]) -> list[tuple[str, str, str]]:
    """(workload, strategy, reason) of every strategy that could not run here."""
    return [
        (workload, strategy, figures["reason"])
        for workload, by_strategy in results.items()
        for strategy, figures in by_strategy.items()
        if figures["status"] == "skipped"
    ]
