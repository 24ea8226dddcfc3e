"""What `make run` prints at the end: each workload's comparison and benchmark on one screen, and where files are.

    python -m parabench.report.summary
"""

from pathlib import Path

import pandas as pd

from parabench.io import read_json
from parabench.paths import benchmark_metrics_dir, results_file, speedup_metrics_file
from parabench.workloads import WORKLOADS

WHERE = """Files: metrics/ (what `dvc metrics show` and `dvc exp show` compare), results/ (every figure with its
environment, load and per-rank memory), plots/ (`dvc plots show`; plots/figures holds the benchmark and sweep charts),
models/ (trained weights)."""


def comparison_rows() -> list[dict]:
    """One row per workload: the run against its reference, end to end and interleaved."""
    rows = []
    for name, workload in WORKLOADS.items():
        path = speedup_metrics_file(name)
        if not path.exists():
            continue
        figures = read_json(path)
        metric = workload.primary_metric
        score = f"{figures[metric]:.3f}" if metric in figures else "n/a"
        if f"{metric}_ci95" in figures:
            score += f" +- {figures[f'{metric}_ci95']:.3f}"
        rate = next(key for key in figures if key.endswith("s_per_s"))
        rows.append({
            "workload": name,
            "run": f"{figures['strategy']} vs {figures['reference']}",
            metric or "quality": score,
            "reference": f"{figures[f'reference_{metric}']:.3f}" if f"reference_{metric}" in figures else "n/a",
            "per_s": f"{figures[rate]:.3g} {rate.removesuffix('_per_s')}",
            "speedup": figures["speedup"],
            "interleaved": figures["speedup_interleaved_robust"],
            "efficiency": figures["scaling_efficiency"],
            "contended": figures["contended"],
            "data": figures["data_origin"],
        })
    return rows


def benchmark_rows() -> list[dict]:
    """One row per benchmark cell that ran (and a mark for those skipped)."""
    rows = []
    for name in WORKLOADS:
        for path in sorted(Path(benchmark_metrics_dir(name)).glob("*.json")):
            figures = read_json(path)
            rate = next((key for key in figures if key.endswith("s_per_s")), None)
            rows.append({
                "workload": name,
                "cell": path.stem,
                "per_s": figures[rate] if rate else "skipped",
                "speedup": figures.get("speedup"),
                "efficiency": figures.get("scaling_efficiency"),
                "vs_ceiling": figures.get("efficiency_vs_ceiling"),
                "contended": figures.get("contended"),
            })
    return rows


def input_rows() -> list[dict]:
    """Per workload, from the benchmark's `single` cell: the transform alone against a whole training step."""
    rows = []
    for name in WORKLOADS:
        path = results_file("benchmark", name)
        single = read_json(path).get("single", {}) if path.exists() else {}
        if single.get("status") != "ran":
            continue
        unit, environment = single["unit"], single["environment"]
        transform, train = (environment[f"{kind}_{unit}s_per_s_per_process"] for kind in ("transform", "train"))
        rows.append({"workload": name, "unit": unit, "transform_per_s": transform, "train_step_per_s": train,
                     "headroom": transform / train})
    return rows


def sweep_rows() -> list[dict]:
    """One row per sweep curve: its fastest value and how it compares (full tables: results/sweep/)."""
    rows = []
    for path in sorted(Path("results/sweep").glob("*.json")):
        for curve, figures in read_json(path)["curves"].items():
            rows.append({"sweep": path.stem, "curve": curve, "best_value": figures["best_value"],
                         "s_per_step": figures["best_median_s"], "vs_single": figures["speedup"],
                         "vs_model_parallel": figures["speedup_vs_model_parallel"],
                         "vs_largest_value": figures["speedup_vs_largest_value"]})
    return rows


def main() -> None:
    """Print both tables, rounded, then where the files are."""
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.precision", 3):
        print("Each run against its reference (end to end; `interleaved` is the benchmark's robust ratio):")
        print(pd.DataFrame(comparison_rows()).to_string(index=False))
        print("\nBenchmark: every strategy in fresh processes, interleaved rounds (ceiling: independent copies of "
              "single side by side, the bound for data-parallel strategies on this machine):")
        print(pd.DataFrame(benchmark_rows()).to_string(index=False))
        print("\nInput path, one process: the workload's transform (decode, normalise, augment) alone against a "
              "whole training step; headroom below 1 would starve training:")
        print(pd.DataFrame(input_rows()).to_string(index=False))
        print("\nSweeps: each curve's fastest value (> 1: faster than that; plots/figures/sweep-*.png has the curves):")
        print(pd.DataFrame(sweep_rows()).to_string(index=False))
    print("\n" + WHERE)


if __name__ == "__main__":
    main()
