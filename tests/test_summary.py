"""What `make run` prints last: every number with a name, no empty column, at most 120 characters a line."""

import shutil
from pathlib import Path

import pytest
import torch
import yaml

from parabench.io import write_json
from parabench.paths import results_file, speedup_metrics_file
from parabench.records import Evaluation, PairedDifference, RunRecord
from parabench.report import summary
from parabench.report.speedup import compare, details
from parabench.stats import paired_difference
from tests.conftest import PROJECT_ROOT
from tests.report_fixture import benchmark_results, write_pipeline_outputs
from tests.setups import run_record
from tests.test_speedup_report import benchmark as timed_pair


def training_run(strategy: str, seconds: float, devices: int) -> RunRecord:
    return run_record(
        strategy,
        [seconds / 100 * (1 + step % 3 / 100) for step in range(30)],
        devices,
        train_time_s=seconds,
        wall_time_s=seconds + 20,
        resumed_after_epoch=0,
        units_per_s=5000 / seconds,
        data_origin="Fashion-MNIST, the full official set (60,000 + 10,000 images); from the mirror "
        "/a/very/long/path/that/would/not/fit/in/a/table/column/and/must/be/wrapped/under/the/table",
    )


def write_workload(name: str, run_hits: list[float], reference_hits: list[float]) -> None:
    run, reference = training_run("ddp", 50.0, 2), training_run("single", 60.0, 1)
    items = {"train": torch.tensor(run_hits), "reference": torch.tensor(reference_hits)}
    scores = {role: {"test_acc": float(hits.mean()), "test_acc_ci95": 0.01} for role, hits in items.items()}
    evaluation = Evaluation(**scores, paired=PairedDifference(**paired_difference(items["train"], items["reference"])))
    benchmark = timed_pair(0.9)
    write_json(speedup_metrics_file(name), compare(run, reference, evaluation, benchmark, "test_acc"))
    write_json(results_file("speedup", name), details(run, reference, evaluation, benchmark).model_dump(mode="json"))


@pytest.fixture
def outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copy(PROJECT_ROOT / "params.yaml", tmp_path / "params.yaml")
    write_workload(
        "fashion_mnist", [1.0] * 860 + [0.0] * 5 + [0.0] * 135, [1.0] * 850 + [0.0] * 10 + [1.0] * 5 + [0.0] * 135
    )
    write_workload("hotdog", [1.0] * 180 + [0.0] * 68, [0.0] * 60 + [1.0] * 120 + [0.0] * 68)

    write_json(results_file("benchmark", "fashion_mnist"), benchmark_results().model_dump(mode="json"))
    return tmp_path


def test_every_line_fits_and_no_column_is_empty(outputs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    summary.main()
    printed = capsys.readouterr().out
    assert max(map(len, printed.splitlines())) <= summary.WIDTH, printed
    assert "NaN" not in printed and "nan" not in printed.lower().replace("nan ", ""), printed
    header = next(line for line in printed.splitlines() if line.lstrip().startswith("workload") and "test_acc" in line)
    for column in ("run", "test_acc", "reference", "difference", "speedup", "training_runs", "agree", "end_to_end"):
        assert column in header.split(), header
    assert "data" not in header.split(), "the data origin is a line under the table, not a column"


def test_each_difference_is_said_in_words_and_each_origin_under_the_table(
    outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary.main()
    printed = capsys.readouterr().out
    assert "fashion_mnist: no detectable difference between ddp and single (+0.005" in printed
    assert "hotdog: ddp scores higher than single (+0.242" in printed
    assert "fashion_mnist: Fashion-MNIST, the full official set" in printed and "wrapped" in printed
    assert " ".join(summary.SPEEDUPS.split()) in " ".join(printed.split()), "which speedup to trust, and why"


def test_a_cut_strategy_shows_no_efficiency_against_the_data_parallel_ceiling(
    outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {row["cell"]: row for row in summary.benchmark_rows(["fashion_mnist"])}
    assert rows["model_parallel"]["vs_ceiling"] is None and rows["dp"]["per_s"] == "skipped"
    summary.main()
    line = next(line for line in capsys.readouterr().out.splitlines() if "model_parallel" in line)
    assert line.split()[-2] == "-", line


def test_a_workload_left_out_of_inputs_is_left_out_though_an_earlier_run_s_files_remain(
    outputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    params = yaml.safe_load((outputs / "params.yaml").read_text())
    del params["inputs"]["hotdog"]
    (outputs / "params.yaml").write_text(yaml.safe_dump(params))
    summary.main()
    printed = capsys.readouterr().out
    assert "fashion_mnist: no detectable difference" in printed and "hotdog" not in printed


def test_a_rate_and_a_speedup_on_one_line_are_one_estimate(tmp_path, monkeypatch):
    """Each cell's rate is single's times its paired speedup: on every line, per_s over single's per_s is the speedup
    shown beside it (each cell's own median, another estimate, stays in results/)."""
    monkeypatch.chdir(tmp_path)
    write_pipeline_outputs(tmp_path)
    rows = {row["cell"]: row for row in summary.benchmark_rows(["fashion_mnist"])}
    single = float(rows["single"]["per_s"])
    for label in ("ddp", "ceiling", "model_parallel"):
        speedup = float(rows[label]["speedup_paired"].split()[0])
        assert float(rows[label]["per_s"]) / single == pytest.approx(speedup, abs=0.006), label
