"""Two runs' benchmarks side by side: does each speedup agree with the other run's within their noise?

    python -m parabench.report.repeatability FOLDER_A FOLDER_B

Each folder is this project after `make run` or `dvc repro` (two clones, two commits, two machines). For every cell
that ran in both (single, the reference, aside), the tool prints its speedup over single with its 95% interval in
each run, whether the two agree within their noise (stats.estimates_agree: the difference within the two intervals
combined; about 1 pair in 20 of the same thing disagrees by chance), and each run's verdict; then how many agree,
how many verdicts repeat, each workload's answer in both runs, and the machine each ran on: across machines the
comparison is of the machines too. It reads results/benchmark/<workload>.json and changes nothing.
"""

import argparse
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from parabench.errors import ConfigError
from parabench.io import read_json
from parabench.paths import results_file
from parabench.records import BenchmarkResults, CellFigures, ran
from parabench.report.answers import speedup_text
from parabench.report.speedup import fastest_in_words
from parabench.runtime.environment import machine_line
from parabench.stats import estimates_agree
from parabench.strategies.registry import BASELINE
from parabench.workloads import WORKLOADS

WIDTH = 160


def benchmark(path: Path) -> BenchmarkResults:
    """One summarised benchmark, refused with its file named where this version cannot read it (another version of
    parabench wrote it)."""
    try:
        return BenchmarkResults.model_validate(read_json(path))
    except ValidationError as error:
        first = error.errors()[0]
        raise ConfigError(
            f"{path}: not a benchmark summary this version of parabench reads ({error.error_count()} problem(s), the "
            f"first at {'.'.join(str(part) for part in first['loc'])}: {first['msg']}); run `make run` there with "
            "this version, or compare with the version that wrote it"
        ) from None


def benchmarks(folder: Path) -> dict[str, BenchmarkResults]:
    """Every workload's summarised benchmark in the project at `folder`."""
    found = {
        workload: benchmark(folder / results_file("benchmark", workload))
        for workload in WORKLOADS
        if (folder / results_file("benchmark", workload)).is_file()
    }
    if not found:
        raise ConfigError(
            f"{folder}: no {results_file('benchmark', '<workload>')} for any of {', '.join(WORKLOADS)}; give the "
            "folder of a project where `make run` (or `dvc repro`) has run"
        )
    return found


def shared(first: dict[str, BenchmarkResults], second: dict[str, BenchmarkResults]) -> list[str]:
    """The workloads both runs benchmarked, in the registry's order."""
    return [workload for workload in WORKLOADS if workload in first and workload in second]


def speedup(cell: CellFigures) -> tuple[float, float, float] | None:
    """The cell's speedup over single with its 95% interval, where single ran beside it."""
    if cell.speedup is None or cell.speedup_ci95 is None:
        return None
    low, high = cell.speedup_ci95
    return cell.speedup, low, high


def rows(first: dict[str, BenchmarkResults], second: dict[str, BenchmarkResults]) -> list[dict[str, Any]]:
    """One row per workload and cell with a speedup in both runs."""
    table = []
    for workload in shared(first, second):
        for label in first[workload].cells:
            one, other = ran(first[workload].cells, label), ran(second[workload].cells, label)
            if label == BASELINE or one is None or other is None:
                continue
            figures = speedup(one), speedup(other)
            if figures[0] is None or figures[1] is None:
                continue
            table.append(
                {
                    "workload": workload,
                    "cell": label,
                    "first": speedup_text(one),
                    "second": speedup_text(other),
                    "agree": estimates_agree(figures[0], figures[1]),
                    "first_verdict": one.speedup_verdict,
                    "second_verdict": other.speedup_verdict,
                }
            )
    return table


def answer(benchmark: BenchmarkResults) -> str:
    """A workload's answer: the fastest strategy, or the tie and who is in it."""
    ranking = benchmark.ranking
    return ranking.fastest or f"{fastest_in_words(ranking)}: {', '.join(ranking.tied)}"


def machine(benchmark: BenchmarkResults) -> str:
    """The machine the benchmark's first cell ran on, in a line (as the figures' titles give it)."""
    return machine_line(next(cell.environment for cell in benchmark.cells.values() if isinstance(cell, CellFigures)))


def report(first_folder: Path, second_folder: Path) -> str:
    """The comparison, as printed (module docstring)."""
    first, second = benchmarks(first_folder), benchmarks(second_folder)
    table = rows(first, second)
    if not table:
        raise ConfigError(f"{first_folder} and {second_folder} have no benchmark cell with a speedup in common")
    frame = pd.DataFrame(table)
    agree, repeated = int(frame["agree"].sum()), int((frame["first_verdict"] == frame["second_verdict"]).sum())
    lines = [
        f"first: {first_folder}; second: {second_folder}",
        frame.to_string(index=False, line_width=WIDTH),
        "",
        f"speedups that agree within their noise: {agree} of {len(frame)} (about 1 in 20 of the same thing "
        f"disagrees by chance); verdicts repeated: {repeated} of {len(frame)}",
    ]
    for workload in shared(first, second):
        lines.append(f"{workload}: {answer(first[workload])} | {answer(second[workload])}")
    for name, benchmark in (("first", first), ("second", second)):
        lines.append(f"{name} ran on {machine(next(iter(benchmark.values())))}")
    return "\n".join(lines)


def main() -> None:
    """Print the comparison of the two folders given."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path, help="a project folder where the pipeline has run")
    parser.add_argument("second", type=Path, help="another")
    arguments = parser.parse_args()
    try:
        print(report(arguments.first, arguments.second))
    except ConfigError as error:
        parser.error(str(error))


if __name__ == "__main__":
    main()
