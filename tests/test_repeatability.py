"""Two runs compared (report/repeatability.py): each speedup against the other run's, within their noise; the same
run twice agrees everywhere, a cell moved beyond its noise is named, and a folder without results, or with results
another version wrote, is refused naming the file."""

import json
from pathlib import Path

import pytest

from parabench.errors import ConfigError
from parabench.paths import results_file
from parabench.report.repeatability import benchmarks, report, rows
from tests.report_fixture import write_pipeline_outputs


def project(root: Path) -> Path:
    """A project folder with the report fixture's outputs."""
    write_pipeline_outputs(root)
    return root


def test_the_same_run_twice_agrees_on_every_speedup(tmp_path):
    first = project(tmp_path / "first")
    table = rows(benchmarks(first), benchmarks(first))
    assert table and all(row["agree"] for row in table)
    assert all(row["cell"] != "single" for row in table), "single against itself says nothing"
    assert f"agree within their noise: {len(table)} of {len(table)}" in report(first, first)


def test_a_speedup_moved_beyond_both_intervals_is_named(tmp_path):
    first, second = project(tmp_path / "first"), project(tmp_path / "second")
    moved = second / results_file("benchmark", "fashion_mnist")
    content = json.loads(moved.read_text())
    cell = content["cells"]["model_parallel"]
    high = cell["speedup_ci95"][1]  # the first run's upper end; the second lands at 3x it
    cell["speedup"], cell["speedup_ci95"] = 3 * high, [2.9 * high, 3.1 * high]
    moved.write_text(json.dumps(content))
    table = rows(benchmarks(first), benchmarks(second))
    disagree = [(row["workload"], row["cell"]) for row in table if not row["agree"]]
    assert disagree == [("fashion_mnist", "model_parallel")]
    assert f"agree within their noise: {len(table) - 1} of {len(table)}" in report(first, second)


def test_a_folder_without_benchmark_results_is_refused_by_name(tmp_path):
    with pytest.raises(ConfigError, match=r"results/benchmark/<workload>\.json"):
        benchmarks(tmp_path)


def test_results_this_version_cannot_read_are_refused_naming_the_file(tmp_path):
    first = project(tmp_path / "first")
    older = first / results_file("benchmark", "fashion_mnist")
    content = json.loads(older.read_text())
    del content["noise"]
    older.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=r"results/benchmark/fashion_mnist\.json: not a benchmark summary .* noise"):
        benchmarks(first)
