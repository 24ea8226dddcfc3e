"""Sweeps: params validation, the cells a sweep times, and what it writes (a CSV and metrics per curve, the figure,
the results): the fastest value picked, compared with single, model_parallel and the curve's largest value.
(tests/test_pipeline_e2e.py runs the default sweep through DVC; tests/test_dvc_yaml_paths.py: an edit of its values
re-runs it and the report alone.)"""

import json

import pandas as pd
import pytest

from parabench.config import load_params, sweep_params
from parabench.engine.cells import StageTime, SweepPoint, sweep_cells
from parabench.errors import ConfigError
from parabench.records import CellFigures, SkippedCell
from parabench.report.benchmark import summarize_cells
from parabench.report.sweep import write_sweep
from parabench.runtime.environment import machine_identity
from tests.test_benchmark_report import entries

PARAM = "pipeline.split_size.resnet50"


def ran(median: float, p25: float, p75: float, details: dict | None = None) -> CellFigures:
    """A cell's figures as summarize_cells gives them, with the step times, memory and details the sweep reads set."""
    figures = summarize_cells(entries()).cells["single"]
    assert isinstance(figures, CellFigures)
    return figures.model_copy(
        update={
            "rate": 24 / median,
            "peak_memory_mb": {"rank0": 100.0, "rank1": 120.0},
            "saved_for_backward_mb": {"rank0": 5.0, "rank1": 5.0},
            "strategy_details": details or {},
            "step_time_s": figures.step_time_s.model_copy(update={"median": median, "p25": p25, "p75": p75}),
        }
    )


def test_the_default_sweeps_time_every_value_per_curve_beside_the_references(base_params, write_params):
    params = load_params(write_params(base_params))
    sweep = params.sweeps["split_size"]
    points = sweep_cells(sweep, "quick")
    values = sweep.values_at("quick")
    assert [point for point, _ in points[:2]] == [SweepPoint("single"), SweepPoint("model_parallel")]
    assert [(point.curve, point.value) for point, _ in points[2:]] == [
        (curve, value) for curve in sweep.curves for value in values
    ]
    assert set(sweep.curves) == {"inprocess", "gpipe", "1f1b"}, "one sweep: its references are timed once"
    overrides = {point.curve: dict(cell.overrides) for point, cell in points[2:] if point.value == values[0]}
    assert overrides == {
        "inprocess": {PARAM: values[0], "pipeline.engine": "inprocess"},
        "gpipe": {PARAM: values[0], "pipeline.engine": "distributed", "pipeline.schedule": "gpipe"},
        "1f1b": {PARAM: values[0], "pipeline.engine": "distributed", "pipeline.schedule": "1f1b"},
    }
    assert {(cell.workload, cell.strategy) for _, cell in points[2:]} == {("resnet50", "pipeline")}
    assert len({cell.label for _, cell in points}) == len(points), "every cell has its own label"


def test_a_sweep_needs_values_for_the_scale(base_params, write_params):
    del base_params["sweeps"]["split_size"]["values"]["quick"]
    with pytest.raises(ConfigError, match=r"sweeps\.split_size\.values: no list for scale 'quick'"):
        load_params(write_params(base_params))


@pytest.mark.parametrize(
    ("values", "key", "given"),
    [([], "values", "[]"), ({"quick": []}, "values.quick", "[]"), ({"quick": [2], "paper": 8}, "values.paper", "8")],
)
def test_values_that_are_not_a_list_get_one_line_saying_what_is(base_params, write_params, values, key, given):
    """Not pydantic's union internals (list[any], dict[str,list[any]]): the key, the value, and what a valid one looks
    like."""
    base_params["sweeps"]["split_size"]["values"] = values
    with pytest.raises(ConfigError) as refused:
        load_params(write_params(base_params))
    problems = [line for line in str(refused.value).splitlines() if line.startswith("  - ")]
    assert len(problems) == 1 and problems[0].startswith(f"  - sweeps.split_size.{key}: {given}"), problems
    assert "[2, 4, 8]" in problems[0] and "list[any]" not in problems[0]


def test_one_list_of_values_serves_every_scale(base_params, write_params):
    base_params["sweeps"]["split_size"]["values"] = [1, 2, 4]
    for scale in ("quick", "paper"):
        base_params["scale"] = scale
        sweep = load_params(write_params(base_params)).sweeps["split_size"]
        assert [point.value for point, _ in sweep_cells(sweep, scale)[2:]] == [1, 2, 4] * len(sweep.curves)


def test_a_value_that_could_never_run_stops_before_any_cell(base_params, write_params):
    base_params["sweeps"]["split_size"]["values"] = [4, 8, 32]  # quick batch: 8
    with pytest.raises(
        ConfigError,
        match=r"(?s)\(sweeps\.split_size, the cell \{'pipeline\.split_size\.resnet50': 32, .*resnet50: 32 is larger",
    ):
        load_params(write_params(base_params))
    base_params["sweeps"]["split_size"]["values"] = [4]
    base_params["sweeps"]["split_size"]["curves"]["inprocess"] = {"pipeline.shedule": "1f1b"}
    with pytest.raises(
        ConfigError,
        match=r"(?s)\(sweeps\.split_size, the cell .*pipeline\.shedule: .*did you mean 'schedule'",
    ):
        load_params(write_params(base_params))


def test_a_sweep_reads_the_inputs_it_names(base_params, write_params):
    base_params["sweeps"]["split_size"]["inputs"] = "data/prepared/fashion_mnist"
    raw_sweep = load_params(write_params(base_params)).sweeps["split_size"]
    assert sweep_params(base_params, raw_sweep)["inputs"]["resnet50"] == "data/prepared/fashion_mnist"
    assert base_params["inputs"]["resnet50"].endswith("random_images.py"), "the workload's own entry is left alone"
    base_params["sweeps"]["split_size"]["inputs"] = "data/raw/hotdog"
    with pytest.raises(ConfigError, match=r"sweeps\.split_size\.inputs: 'data/raw/hotdog' is not what resnet50"):
        load_params(write_params(base_params))


def test_a_sweep_of_a_key_that_is_no_single_value_is_refused_at_its_cell(base_params, write_params):
    """A sweep varies one workload's entry (pipeline.split_size.resnet50); the whole mapping is refused, naming it."""
    base_params["sweeps"]["split_size"]["param"] = "pipeline.split_size"
    with pytest.raises(
        ConfigError,
        match=r"(?s)the cell \{'pipeline\.split_size': 2, .*pipeline\.split_size: 2 \(int\) is not a mapping",
    ):
        load_params(write_params(base_params))


def test_a_curve_name_must_make_a_file_name(base_params, write_params):
    base_params["sweeps"]["split_size"]["curves"] = {"../x": {}}
    with pytest.raises(ConfigError, match=r"curve name '../x' becomes a file name"):
        load_params(write_params(base_params))


def test_a_sweep_writes_each_curve_and_picks_its_fastest_value(base_params, write_params, tmp_path, monkeypatch):
    sweep = load_params(write_params(base_params)).sweeps["split_size"]
    points = [
        SweepPoint("single"),
        SweepPoint("model_parallel"),
        *(SweepPoint(curve, value) for curve in ("gpipe", "1f1b") for value in (1, 4, 12, 24)),
    ]
    distributed = {"engine": "distributed", "devices_virtual": True}
    results = [
        ran(2.0, 1.9, 2.1),
        SkippedCell(status="skipped", reason="needs 2 devices\nmore"),
        ran(5.0, 4.0, 6.0, distributed),
        ran(1.0, 0.9, 1.2, distributed),
        ran(1.5, 1.4, 1.6, distributed),
        ran(3.0, 2.9, 3.1, distributed),
        ran(4.0, 3.0, 5.0, distributed),
        SkippedCell(status="skipped", reason="1f1b needs micro-batches"),
        ran(0.8, 0.7, 0.9, distributed),
        ran(1.6, 1.5, 1.7, distributed),
    ]
    monkeypatch.chdir(tmp_path)
    write_sweep("toy", sweep, "quick", points, results, StageTime(), machine_identity(), None)

    gpipe = pd.read_csv(tmp_path / "plots/sweep/toy/gpipe.csv")
    assert list(gpipe.columns) == [
        "value",
        "median_s",
        "p25_s",
        "p75_s",
        "samples_per_s",
        "peak_memory_mb",
        "saved_for_backward_mb",
    ]
    assert gpipe["value"].tolist() == [1, 4, 12, 24] and gpipe["median_s"].tolist() == [5.0, 1.0, 1.5, 3.0]
    assert pd.read_csv(tmp_path / "plots/sweep/toy/1f1b.csv")["value"].tolist() == [1, 12, 24]
    metrics = json.loads((tmp_path / "metrics/sweep/toy/gpipe.json").read_text())
    assert metrics == {"status": "ran", "best_value": 4, "speedup": 2.0, "speedup_vs_largest_value": 3.0}
    assert json.loads((tmp_path / "metrics/sweep/toy/1f1b.json").read_text())["best_value"] == 12
    full = json.loads((tmp_path / "results/sweep/toy.json").read_text())
    assert full["curves"]["gpipe"]["speedup_vs_model_parallel"] is None
    assert full["reference_lines"]["model_parallel"] == {"status": "skipped", "reason": "needs 2 devices\nmore"}
    assert full["skipped"] == [
        "model_parallel pipeline.split_size.resnet50=None skipped: needs 2 devices",
        "1f1b pipeline.split_size.resnet50=4 skipped: 1f1b needs micro-batches",
    ]
    assert full["curves"]["gpipe"]["note"] is None, "a distributed curve can overlap its stages"
    assert (tmp_path / "plots/figures/sweep-toy.png").stat().st_size > 10_000


def test_an_inprocess_curve_on_the_cpu_says_its_stages_cannot_overlap(base_params, write_params, tmp_path, monkeypatch):
    sweep = load_params(write_params(base_params)).sweeps["split_size"]
    inprocess = {"engine": "inprocess", "devices_virtual": True}
    monkeypatch.chdir(tmp_path)
    write_sweep(
        "toy",
        sweep,
        "quick",
        [SweepPoint("single"), SweepPoint("inprocess", 2)],
        [ran(1.0, 0.9, 1.1), ran(2.0, 1.9, 2.1, inprocess)],
        StageTime(),
        machine_identity(),
        None,
    )
    curve = json.loads((tmp_path / "results/sweep/toy.json").read_text())["curves"]["inprocess"]
    assert "cannot overlap" in curve["note"] and curve["speedup"] == 0.5


def test_a_sweep_that_cannot_run_on_this_hardware_records_why_and_still_writes_its_outputs(
    base_params, write_params, tmp_path, monkeypatch
):
    """One device: no cell of the pipeline sweep can run; the stage still writes every output DVC expects."""
    sweep = load_params(write_params(base_params)).sweeps["split_size"]
    reason = SkippedCell(
        status="skipped", reason="pipeline cuts the model into one stage per device and needs at least 2"
    )
    monkeypatch.chdir(tmp_path)
    write_sweep(
        "toy",
        sweep,
        "quick",
        [SweepPoint("single"), SweepPoint("model_parallel"), SweepPoint("inprocess", 3)],
        [ran(1.0, 0.9, 1.1), reason, reason],
        StageTime(),
        machine_identity(),
        None,
    )
    assert json.loads((tmp_path / "metrics/sweep/toy/inprocess.json").read_text()) == {"status": "skipped"}
    assert pd.read_csv(tmp_path / "plots/sweep/toy/inprocess.csv").empty
    full = json.loads((tmp_path / "results/sweep/toy.json").read_text())
    assert full["curves"]["inprocess"] == {"status": "skipped"}
    assert full["skipped"][-1] == (
        "inprocess pipeline.split_size.resnet50=3 skipped: pipeline cuts the model into "
        "one stage per device and needs at least 2"
    )
    assert (tmp_path / "plots/figures/sweep-toy.png").exists()


def test_a_curve_may_name_its_own_strategy_to_sweep_a_knob_across_strategies(base_params, write_params):
    """The documented precision sweep: one curve per strategy, each cell under its curve's strategy, the value set."""
    base_params["sweeps"]["precision"] = {
        **base_params["sweeps"]["split_size"],
        "workload": "fashion_mnist",
        "strategy": "ddp",
        "inputs": "data/prepared/fashion_mnist",
        "param": "precision",
        "values": ["32", "bf16-mixed"],
        "curves": {"ddp": {}, "fsdp": {"strategy": "fsdp"}},
    }
    sweep = load_params(write_params(base_params)).sweeps["precision"]
    cells = [(point.curve, cell.strategy, cell.overrides) for point, cell in sweep_cells(sweep, "quick")][2:]
    assert cells == [
        ("ddp", "ddp", (("precision", "32"),)),
        ("ddp", "ddp", (("precision", "bf16-mixed"),)),
        ("fsdp", "fsdp", (("precision", "32"),)),
        ("fsdp", "fsdp", (("precision", "bf16-mixed"),)),
    ]
    base_params["sweeps"]["precision"]["curves"]["fsdp"] = {"strategy": "zero3"}
    with pytest.raises(ConfigError, match=r"curve fsdp: strategy 'zero3' is none of"):
        load_params(write_params(base_params))
