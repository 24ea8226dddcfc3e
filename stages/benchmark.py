"""Stage benchmark@<workload>: every listed strategy and the machine's ceiling, interleaved over rounds."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params, read_raw_params
from parabench.engine.cells import plan_benchmark, run_cells
from parabench.io import write_atomic, write_json
from parabench.paths import benchmark_figure_file, benchmark_metrics_dir, benchmark_table_file, results_file
from parabench.report.benchmark import compact, skipped, summarize_cells, table
from parabench.report.benchmark_figure import draw
from parabench.runtime.hardware import resolve
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    params, raw = load_params(), read_raw_params()
    options = params.benchmark
    planned = plan_benchmark(raw, args.workload, options.strategies, resolve(params.hardware).devices)
    run_cells(planned, options.rounds, options.warmup_steps, options.timed_steps)
    results = summarize_cells(planned)
    rows = table(results)
    write_atomic(benchmark_table_file(args.workload), lambda tmp: rows.to_csv(tmp, index=False, float_format="%.6g"))
    draw(args.workload, rows, skipped(results), benchmark_figure_file(args.workload))
    write_json(results_file("benchmark", args.workload), results)
    labels = WORKLOADS[args.workload].labels(params.settings(args.workload))
    for label, figures in results.items():
        write_json(benchmark_metrics_dir(args.workload) / f"{label}.json", compact(figures) | labels)


if __name__ == "__main__":
    stage_main(main)
