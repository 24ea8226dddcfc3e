"""Stage benchmark: every listed strategy side by side, interleaved over rounds; JSON, CSV and a bar chart."""

from pathlib import Path

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.benchmark import run_benchmark
from parabench.io import write_atomic, write_json
from parabench.report.benchmark import skipped, summarize_benchmark, table
from parabench.report.benchmark_figure import draw

METRICS = Path("metrics/benchmark.json")
TABLE = Path("plots/benchmark.csv")
FIGURE = Path("plots/benchmark.png")


def main() -> None:
    results = summarize_benchmark(run_benchmark(load_params()))
    rows = table(results)
    write_atomic(TABLE, lambda tmp: rows.to_csv(tmp, index=False, float_format="%.6g"))
    draw(rows, skipped(results), FIGURE)
    write_json(METRICS, results)


if __name__ == "__main__":
    stage_main(main)
