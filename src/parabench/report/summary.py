"""What `make run` prints at the end: each workload's comparison and benchmark on one screen, and where files are.

python -m parabench.report.summary
"""

import textwrap
from typing import Any, TypeVar

import pandas as pd

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.io import read_json, read_model
from parabench.paths import PROBE_FILE, PROBE_NETWORK_FILE, REPORT_FILE, results_file, speedup_metrics_file
from parabench.records import (
    BenchmarkResults,
    CellFigures,
    Comparison,
    CurveFigures,
    PredictionResults,
    Record,
    SweepResults,
    probe_record,
    ran,
)
from parabench.report.answers import fastest_sentence
from parabench.report.benchmark import paired_rate
from parabench.report.prediction_rows import check_row, order_row, probe_rows
from parabench.stats import NO_DIFFERENCE
from parabench.strategies.registry import BASELINE, HEADLINE
from parabench.workloads import WORKLOADS

Written = TypeVar("Written", bound=Record)  # a results file's record
WIDTH = 120
SPEEDUPS = (
    "speedups over the reference: speedup, the headline, from the benchmark's interleaved turns with its 95% "
    "interval (marked * where the benchmark did not time the strategy: then from the training runs); "
    "training_runs, the two runs' median steps, timed minutes apart; agree: whether the two figures agree "
    "within their 95% intervals combined (results/speedup has both); end_to_end, the jobs' wall times: "
    "start-up and the evaluation after each epoch included"
)
WHERE = """Files: metrics/ (what `dvc metrics show` and `dvc exp show` compare), results/ (every figure with its
environment, load and per-rank memory), plots/ (`dvc plots show`; plots/figures holds the benchmark and sweep
charts), models/ (trained weights)."""


def with_interval(scores: dict[str, float], metric: str) -> str:
    """A score as `mean +- 95% half-width` (the half-width only where the workload has one)."""
    interval = scores.get(f"{metric}_ci95")
    return f"{scores[metric]:.3f}" + (f" +- {interval:.3f}" if interval is not None else "")


def comparison(workloads: list[str]) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """One row per workload, the run against its reference; under the table, each quality difference in words, and
    where each workload's data came from."""
    rows, verdicts, origins = [], [], []
    for name in workloads:
        workload = WORKLOADS[name]
        path = speedup_metrics_file(name)
        if not path.exists():
            continue
        figures = read_json(path)
        more = read_model(results_file("speedup", name), Comparison)
        knob = f" ({more.knobs})" if more.knobs else ""
        row = {"workload": name, "run": f"{more.strategy}{knob}/{more.reference}"}
        metric = workload.primary_metric
        if metric is not None:
            row[metric] = with_interval(more.evaluation.train, metric)
            row["reference"] = with_interval(more.evaluation.reference, metric)
            row["difference"] = f"{figures[f'{metric}_delta']:+.3f} +- {figures[f'{metric}_delta_ci95']:.3f}"
            verdicts.append(f"  {name}: {more.quality}")
        both = more.speedups
        low, high = both.speedup_ci95
        mark = "" if both.speedup_from == "benchmark" else "*"
        rows.append(
            {
                **row,
                "speedup": f"{both.speedup:.2f} ({low:.2f}-{high:.2f}){mark}",
                "training_runs": both.speedup_training_runs,
                "agree": both.speedups_agree,
                "end_to_end": more.speedup_end_to_end,
            }
        )
        if figures["contended"]:
            verdicts.append(f"  {name}: CONTENDED: other programs took over 10% of the CPU while it trained")
        origins.append(f"  {name}: {more.data_origin}")
    return rows, verdicts, origins


def written(kind: str, names: list[str], record: type[Written]) -> dict[str, Written]:
    """name -> results/<kind>/<name>.json read as `record`, for each of `names` whose stage has written it."""
    paths = {name: results_file(kind, name) for name in names}
    return {name: read_model(path, record) for name, path in paths.items() if path.exists()}


def benchmarks(workloads: list[str]) -> dict[str, BenchmarkResults]:
    """Each workload's benchmark results, where its speedup stage wrote them."""
    return written("benchmark", workloads, BenchmarkResults)


BENCHMARK_COLUMNS = (
    "Benchmark: every strategy, its model kept alive, the cells taking turns step by step (speedup_paired: its rate "
    "over single's, turn by turn, with its 95% interval, the figure every verdict uses; per_s: single's median rate "
    "times that speedup, so that the two columns are one estimate (results/benchmark/ keep each cell's own median); "
    "ceiling: independent copies of single side by side, the bound for data-parallel strategies on this "
    "machine; vs_ceiling is theirs alone; comm_share: the step's communication not hidden behind compute; disturbed: "
    "steps left out, other programs having taken the CPU meanwhile; plots/figures/benchmark-*.png splits every cell's "
    "step into its parts):"
)
VERDICT_WORDS = {"faster": "faster", "slower": "slower", NO_DIFFERENCE: "within noise"}


def benchmark_rows(workloads: list[str]) -> list[dict[str, Any]]:
    """One row per benchmark cell that ran (and a mark for those skipped), from the speedup stage's results: its
    speedup over single paired by turn with its 95% interval, and the rate that speedup gives it (single's median
    rate times the speedup: one estimate, the two columns each other's ratio)."""
    rows: list[dict[str, Any]] = []
    for name, benchmark in benchmarks(workloads).items():
        reference = ran(benchmark.cells, BASELINE)
        for label, cell in sorted(benchmark.cells.items()):
            if not isinstance(cell, CellFigures):
                rows.append({"workload": name, "cell": label, "per_s": "skipped"})
                continue
            paired = (
                f"{cell.speedup:.2f} ({cell.speedup_ci95[0]:.2f}-{cell.speedup_ci95[1]:.2f})"
                if cell.speedup is not None and cell.speedup_ci95 is not None and label != BASELINE
                else "-"
            )
            rows.append(
                {
                    "workload": name,
                    "cell": label,
                    "per_s": f"{paired_rate(cell, reference):.4g}",
                    "speedup_paired": paired,
                    "verdict": "-" if label == BASELINE else VERDICT_WORDS.get(cell.speedup_verdict or "", "-"),
                    "vs_ceiling": cell.efficiency_vs_ceiling,
                    "comm_share": cell.communication_share,
                    "disturbed": sum(cell.disturbed_steps.values()),
                }
            )
    return rows


def answers(workloads: list[str]) -> list[str]:
    """Per workload, the benchmark's answer: the fastest strategy beyond the noise (or the tie), the A/A control,
    the ceiling, and the cells flagged as not an answer."""
    return [f"  {name}: {fastest_sentence(name, benchmark)}" for name, benchmark in benchmarks(workloads).items()]


def input_rows(workloads: list[str]) -> list[dict[str, Any]]:
    """Per workload, from the benchmark's `single` cell: the transform alone against a whole training step."""
    rows = []
    for name, benchmark in benchmarks(workloads).items():
        single = ran(benchmark.cells, BASELINE)
        if single is None:
            continue
        unit, environment = single.unit, single.environment
        transform, train = (environment[f"{kind}_{unit}s_per_s_per_process"] for kind in ("transform", "train"))
        rows.append(
            {
                "workload": name,
                "unit": unit,
                "transform_per_s": transform,
                "train_step_per_s": train,
                "headroom": transform / train,
            }
        )
    return rows


def sweep_rows(sweeps: list[str]) -> list[dict[str, Any]]:
    """One row per sweep curve: its fastest value and how it compares (full tables: results/sweep/)."""
    rows: list[dict[str, Any]] = []
    for name, results in sweep_results(sweeps).items():
        for curve, figures in results.curves.items():
            if not isinstance(figures, CurveFigures):
                rows.append({"sweep": name, "curve": curve, "best_value": "skipped"})
                continue
            rows.append(
                {
                    "sweep": name,
                    "curve": curve,
                    "best_value": figures.best_value,
                    "s_per_step": figures.best_median_s,
                    "vs_single": figures.speedup,
                    "vs_model_parallel": figures.speedup_vs_model_parallel,
                    "vs_largest_value": figures.speedup_vs_largest_value,
                }
            )
    return rows


def sweep_results(sweeps: list[str]) -> dict[str, SweepResults]:
    """Each sweep's results, where its sweep_summary stage wrote them."""
    return written("sweep", sweeps, SweepResults)


def prediction_rows(
    workloads: list[str], sweeps: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Per checked cell of the benchmarks and the sweeps, predicted against measured; per pair of a benchmark's
    checked cells measured apart beyond the noise, whether the prediction orders them alike; per workload and device
    count, ddp's predicted speedup and what its link is (results/prediction/ have every strategy)."""
    checks, orders, rows = [], [], []
    for name, results in sweep_results(sweeps).items():
        checks += [{"where": f"sweep {name}", **check_row(check)} for check in results.prediction_checks]
    for name, prediction in written("prediction", workloads, PredictionResults).items():
        checks += [{"where": name, **check_row(check)} for check in prediction.checks]
        orders += [{"where": name, **order_row(order)} for order in prediction.order_checks]
        for row in prediction.predictions:
            if row.strategy == HEADLINE:
                rows.append(
                    {
                        "workload": name,
                        "devices": row.devices,
                        f"{HEADLINE}_speedup": row.speedup,
                        "efficiency": row.efficiency,
                        "exposed": f"{row.exposed_share:.0%}",
                        "link": row.link.split(":")[0],
                    }
                )
    return checks, orders, rows


def table(rows: list[dict[str, Any]]) -> str:
    """Rows as a plain table, numbers to 3 significant digits, a dash where a row has no value."""
    if not rows:
        return "(none)"
    frame = pd.DataFrame(rows)
    frame = frame.astype(object).where(frame.notna(), "-")
    return frame.to_string(index=False, float_format=lambda value: f"{value:.3g}")


def main() -> None:
    """Print the comparison with its verdicts and data origins, the benchmark, input path and sweeps of the workloads
    and sweeps params.yaml runs (not what an earlier run left), then where the files are; every line at most WIDTH
    characters."""
    params = load_params()
    workloads = list(params.inputs)
    rows, verdicts, origins = comparison(workloads)
    print(textwrap.fill(f"Each run against its reference ({SPEEDUPS}):", WIDTH))
    print(table(rows))
    print("Quality, paired on the same test items (a difference whose 95% interval holds 0 is no difference):")
    print("\n".join(textwrap.fill(line, WIDTH, subsequent_indent="    ") for line in verdicts))
    print("Data:")
    print("\n".join(textwrap.fill(line, WIDTH, subsequent_indent="    ") for line in origins))
    print("\n" + textwrap.fill(BENCHMARK_COLUMNS, WIDTH))
    print(table(benchmark_rows(workloads)))
    print("Answers, named only beyond each benchmark's noise floor (its A/A control: single timed twice):")
    print("\n".join(textwrap.fill(line, WIDTH, subsequent_indent="    ") for line in answers(workloads)))
    print("\nInput path, one process: the workload's transform (decode, normalise, augment) alone against a whole")
    print("training step; headroom below 1 would starve training:")
    print(table(input_rows(workloads)))
    print("\nSweeps: each curve's fastest value (> 1: faster than that; plots/figures/sweep-*.png has the curves):")
    print(table(sweep_rows(list(params.sweeps))))
    checks, orders, predicted = prediction_rows(workloads, list(params.sweeps))
    print("\nThe collectives over this node's devices (the probe; a latency and bandwidth fitted to each, alpha-beta):")
    print(table(probe_rows(probe_record(read_json(PROBE_FILE))) if PROBE_FILE.exists() else []))
    if PROBE_NETWORK_FILE.exists() and probe_rows(network := probe_record(read_json(PROBE_NETWORK_FILE))):
        print(f"\nAnd between the {network.ranks} nodes, one rank on each:")
        print(table(probe_rows(network)))
    print("\nPredicted against measured at each multi-device cell (one replica's compute and the probe's links; a")
    print("cut model's stages timed one by one):")
    print(table(checks))
    print("Where two checked cells' rates differ beyond the noise floor, does the prediction order them alike?")
    print(table(orders))
    print("What more devices would buy (PREDICTED, for devices of their own; results/prediction/ has every strategy):")
    print(table(predicted))
    print("\n" + WHERE)
    if REPORT_FILE.exists():
        print(f"\nThe answer on one page, every figure embedded (open it in a browser): {REPORT_FILE}")


if __name__ == "__main__":
    stage_main(main, timed=False)
