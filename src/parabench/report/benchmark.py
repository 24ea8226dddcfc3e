"""Benchmark results per cell: median rate with its spread over rounds, speedup, efficiency, and the ceiling."""

import statistics
from typing import Any

import pandas as pd

from parabench.engine.cells import CEILING, CellRuns
from parabench.engine.timing import summarize
from parabench.io import write_atomic, write_json
from parabench.paths import benchmark_figure_file, benchmark_metrics_dir, benchmark_table_file, results_file
from parabench.report.benchmark_figure import draw
from parabench.report.time_split import PART_MEANINGS, time_split, typical_parts
from parabench.runtime.environment import describe, machine_identity, machine_line
from parabench.runtime.load import CONTENDED_SHARE

REFERENCE = "single"


def cell_result(entry: CellRuns) -> dict[str, Any]:
    """One cell's figures: a median over every timed step of every round, and the rounds' extremes."""
    if entry.plan is None:
        return {"status": "skipped", "reason": entry.skipped_reason}
    plan = entry.plan
    unit = entry.runs[-1]["unit"]
    steps = [duration for run in entry.runs for duration in run["step_durations"]]
    per_round = [plan.global_batch / statistics.median(run["step_durations"]) for run in entry.runs]
    shares = [run["other_cpu_share"] for run in entry.runs if run["other_cpu_share"] is not None]
    return {
        "status": "ran",
        "unit": unit,
        "rate": plan.global_batch / statistics.median(steps),
        "rate_slowest_round": min(per_round),
        "rate_fastest_round": max(per_round),
        "step_time_s": summarize(steps),
        "rounds": len(entry.runs),
        "global_batch": plan.global_batch,
        "processes": plan.processes,
        "devices": plan.devices,
        "devices_virtual": plan.machine.accelerator == "cpu" and plan.devices > 1,
        "data_parallel": plan.strategy.data_parallel and plan.copies == 1,
        "other_cpu_share": max(shares) if shares else None,
        "contended": bool(shares) and max(shares) > CONTENDED_SHARE,
        "peak_memory_mb": {key: max(run["peak_memory_mb"][key] for run in entry.runs)
                           for key in entry.runs[-1]["peak_memory_mb"]},
        "memory_kind": entry.runs[-1]["memory_kind"],
        "strategy_details": entry.runs[-1]["strategy_details"],
        "environment": {
            **describe(plan.machine, plan.processes, plan.threads, plan.distributed),
            f"transform_{unit}s_per_s_per_process": statistics.median(run["transform_units_per_s"]
                                                                      for run in entry.runs),
            f"train_{unit}s_per_s_per_process": plan.global_batch / statistics.median(steps) / plan.processes,
        },
    }


def summarize_cells(entries: list[CellRuns]) -> dict[str, dict[str, Any]]:
    """label -> figures, with speedup and scaling efficiency against `single`, and efficiency against the ceiling.

    The ceiling is `devices` independent copies of `single`, each on its share of the batch, side by side
    with no communication: the most a data-parallel strategy, whose replicas do exactly that work plus the
    communication, can reach on this machine's (possibly shared) devices. A strategy's efficiency_vs_ceiling =
    its speedup / the ceiling's speedup: what the strategy itself loses, the shared cores aside. Only data-parallel
    strategies get one: a cut strategy (model_parallel, pipeline) changes the work itself (micro-batches, one
    process's threads over smaller kernels), so the ceiling does not bound it.
    """
    results = {entry.cell.label: cell_result(entry) for entry in entries}
    ran = [figures for figures in results.values() if figures["status"] == "ran"]
    reference, ceiling = results.get(REFERENCE, {}), results.get(CEILING, {})
    add_time_splits(entries, results)
    for figures in ran:
        figures["speedup"] = figures["rate"] / reference["rate"] if reference.get("status") == "ran" else None
        figures["scaling_efficiency"] = figures["speedup"] / figures["devices"] if figures["speedup"] else None
    for figures in ran:
        comparable = figures["data_parallel"] and ceiling.get("status") == "ran"
        comparable = comparable and figures["devices"] == ceiling["devices"]
        comparable = comparable and bool(figures["speedup"]) and bool(ceiling["speedup"])
        figures["efficiency_vs_ceiling"] = figures["speedup"] / ceiling["speedup"] if comparable else None
    return results


def add_time_splits(entries: list[CellRuns], results: dict[str, dict[str, Any]]) -> None:
    """Each cell that ran gets its time split (report.time_split); a data-parallel strategy's compute is the ceiling
    copies' forward and backward, where a ceiling ran on as many devices."""
    ceilings = [entry for entry in entries if entry.cell.label == CEILING and entry.plan is not None]
    ceiling_devices = ceilings[0].plan.devices if ceilings and ceilings[0].plan else None
    ceiling_compute = typical_parts(ceilings[0].runs)["forward_backward"] if ceilings else None
    for entry in entries:
        if entry.plan is None:
            continue
        figures = results[entry.cell.label]
        figures |= time_split(
            entry.runs, entry.plan.strategy.name,
            communicates=entry.plan.devices > 1 and entry.plan.copies == 1,
            data_parallel=figures["data_parallel"],
            compute_beside=ceiling_compute if entry.plan.devices == ceiling_devices else None,
        )


def compact(figures: dict[str, Any]) -> dict[str, Any]:
    """The few numbers `dvc metrics show` prints for a cell."""
    if figures["status"] != "ran":
        return {"status": "skipped"}
    return {
        "status": "ran",
        f"{figures['unit']}s_per_s": figures["rate"],
        "speedup": figures["speedup"],
        "scaling_efficiency": figures["scaling_efficiency"],
        "efficiency_vs_ceiling": figures["efficiency_vs_ceiling"],
        "communication_share": figures["communication_share"],
        "contended": figures["contended"],
    }


def table(results: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per cell that ran, for `dvc plots` and the figure: its rate, spread, speedups and time split (a part
    that does not apply to the cell left empty)."""
    rows = [
        {
            "cell": label,
            "unit": figures["unit"],
            "rate": figures["rate"],
            "rate_slowest_round": figures["rate_slowest_round"],
            "rate_fastest_round": figures["rate_fastest_round"],
            "speedup": figures["speedup"],
            "scaling_efficiency": figures["scaling_efficiency"],
            "efficiency_vs_ceiling": figures["efficiency_vs_ceiling"],
            "devices": figures["devices"],
            "devices_virtual": figures["devices_virtual"],
            "step_median_s": figures["step_time_s"]["median"],
            **{f"{part}_s": figures["time_split_s"].get(part) for part in PART_MEANINGS},
        }
        for label, figures in results.items()
        if figures["status"] == "ran"
    ]
    return pd.DataFrame(rows)


def skipped(results: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(cell, reason) of every cell that could not run here."""
    return [(label, figures["reason"]) for label, figures in results.items() if figures["status"] == "skipped"]


def write_benchmark(workload: str, planned: list[CellRuns], choices: dict[str, Any]) -> None:
    """Every output of a workload's benchmark: the table, the figure, the full results and a metrics JSON per cell
    (with the choices the workload shows beside its metrics)."""
    results = summarize_cells(planned)
    rows = table(results)
    write_atomic(benchmark_table_file(workload), lambda tmp: rows.to_csv(tmp, index=False, float_format="%.6g"))
    draw(workload, rows, skipped(results), machine_line(machine_identity()), benchmark_figure_file(workload))
    write_json(results_file("benchmark", workload), results)
    for label, figures in results.items():
        write_json(benchmark_metrics_dir(workload) / f"{label}.json", compact(figures) | choices)
