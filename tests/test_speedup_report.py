"""The run against its reference: a dozen numbers for `dvc exp show` (speedup and its verdict, the benchmark's fastest,
the primary metric by name and its paired difference), the rest in results/ (efficiency, end to end, rates)."""

import pytest

from parabench.data.miniimagenet import MINIIMAGENET
from parabench.data.provenance import Provenance
from parabench.engine.cells import Cell, CellRuns
from parabench.records import CellsSummary, Evaluation, RunRecord
from parabench.report.benchmark import summarize_cells
from parabench.report.speedup import compare, details, speedups
from tests.setups import cpu_setup, run_record, tiny_plan
from tests.test_benchmark_report import steady

SAMPLE = Provenance(  # as the train stage's results record carries it: 20 images of each official class
    dataset="miniimagenet",
    kind="sample",
    source="x",
    verified=False,
    detail="",
    checksum_algorithm="sha256",
    layout="pickles",
    official_classes=MINIIMAGENET.official_classes,
    official_images_per_class=MINIIMAGENET.official_images_per_class,
    class_counts={
        split: {f"n{split}{index}": 20 for index in range(classes)}
        for split, classes in MINIIMAGENET.official_classes.items()
    },
)


def record(strategy: str, seconds: float, devices: int, contended: bool = False) -> RunRecord:
    """A run of 10 steps around seconds / 10 each, alternating -+1%."""
    steps = [seconds / 10 * (1.01 if step % 2 else 0.99) for step in range(10)]
    return run_record(
        strategy,
        steps,
        devices,
        workload="miniimagenet",
        train_time_s=seconds,
        units_per_s=100 / seconds,
        unit="episode",
        contended=contended,
        labels={"pretrained": "none"},
        data_origin=MINIIMAGENET.origin_sentence(SAMPLE),
        data_provenance=SAMPLE.model_dump(),
        other_cpu_share=0.0,
        load_average_1m=0.1,
        environment={},
        scale="tiny",  # as the benchmark's cells below
    )


def benchmark(ddp_seconds: float | None) -> CellsSummary:
    """single's cell at 1 s a step and ddp's at `ddp_seconds` (skipped where None), each 3 turns of 8 steps
    alternating -+1%, summarised with no A/A control and a smallest difference of 2%: the noise floor."""
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    single = tiny_plan("single", two, "benchmark", batch_size=64)
    entries = [CellRuns(Cell("fashion_mnist", "single"), single, run=steady(1.0, 0.01))]
    ddp = Cell("fashion_mnist", "ddp")
    if ddp_seconds is None:
        entries.append(CellRuns(ddp, None, skipped_reason="..."))
    else:
        plan = tiny_plan("ddp", two, "benchmark", batch_size=64)
        entries.append(CellRuns(ddp, plan, run=steady(ddp_seconds, ddp_seconds / 100)))
    return summarize_cells(entries, smallest_difference=0.02)


def test_speedup_efficiency_and_the_primary_metric_by_name():
    evaluation = Evaluation.model_validate(
        {
            "train": {"test_acc": 0.30, "test_acc_ci95": 0.01},
            "reference": {"test_acc": 0.25, "test_acc_ci95": 0.02},
            "paired": {"delta": 0.05, "ci95_low": 0.03, "ci95_high": 0.07, "items": 600, "mcnemar_p": None},
        }
    )
    timed = benchmark(4 / 6)
    run, reference = record("ddp", 50, 2), record("single", 100, 1, contended=True)
    row = compare(run, reference, evaluation, timed, "test_acc")
    more = details(run, reference, evaluation, timed)
    both = more.speedups
    assert row["speedup"] == pytest.approx(1.5) and both.speedup_from == "benchmark", "the interleaved figure"
    assert (row["speedup_verdict"], row["noise_floor"], row["fastest"]) == ("faster", 0.02, "ddp")
    assert both.speedup_ci95[0] < 1.5 < both.speedup_ci95[1] and more.scaling_efficiency == pytest.approx(0.75)
    assert both.speedup_training_runs == 2.0 and both.speedup_training_runs_ci95[0] < 2.0
    assert both.speedups_agree is False, "1.5 and 2.0, each within about 2%: the two figures disagree"
    assert (row["test_acc"], row["test_acc_ci95"]) == (0.30, 0.01)
    assert row["test_acc_delta"] == pytest.approx(0.05) and row["test_acc_delta_ci95"] == pytest.approx(0.02)
    assert more.rate == {"unit": "episode", "run": 2.0, "reference": 1.0} and row["contended"] is True
    assert row["data_origin"] == "miniImageNet SAMPLE, 2,000 of 60,000", "a SAMPLE says so, in a few words"
    assert row["pretrained"] == "none", "the workload's labels are in every row"
    assert "reference_test_acc" not in row and "scaling_efficiency" not in row, "the rest lives in results/"
    assert len(row) <= 12, f"about a dozen columns in dvc exp show, with the prediction's two: {sorted(row)}"
    thirds = evaluation.model_copy(update={"train": {"test_acc": 1 / 3, "test_acc_ci95": 0.012345678}})
    shown = compare(run, reference, thirds, timed, "test_acc")
    assert (shown["test_acc"], shown["test_acc_ci95"]) == (0.3333, 0.01235), "4 significant digits in the metrics"
    assert details(run, reference, thirds, timed).evaluation.train["test_acc"] == 1 / 3, "results/: all"


def test_no_interleaved_ratio_when_the_benchmark_did_not_run_both():
    evaluation = Evaluation.model_validate(
        {
            "train": {"test_acc": 0.3},
            "reference": {"test_acc": 0.3},
            "paired": {"delta": 0.0, "ci95_low": -0.01, "ci95_high": 0.01, "items": 600, "mcnemar_p": 1.0},
        }
    )
    skipped = benchmark(None)
    row = compare(record("ddp", 50, 2), record("single", 100, 1), evaluation, skipped, "test_acc")
    both = speedups(record("ddp", 50, 2), record("single", 100, 1), skipped)
    assert both.speedup_benchmark is None and both.speedups_agree is None and row["speedup_verdict"] is None
    assert row["speedup"] == 2.0 and both.speedup_from == "training_runs"


def test_end_to_end_is_the_jobs_wall_times_and_none_after_a_resume():
    evaluation = Evaluation.model_validate(
        {
            "train": {"test_acc": 0.3},
            "reference": {"test_acc": 0.3},
            "paired": {"delta": 0.0, "ci95_low": -0.01, "ci95_high": 0.01, "items": 600, "mcnemar_p": 1.0},
        }
    )
    run = record("ddp", 50, 2).model_copy(update={"wall_time_s": 80.0, "resumed_after_epoch": 0})
    reference = record("single", 60, 1).model_copy(update={"wall_time_s": 60.0, "resumed_after_epoch": 0})
    row, more = compare(run, reference, evaluation, None, "test_acc"), details(run, reference, evaluation, None)
    assert row["speedup"] == pytest.approx(1.2) and more.speedup_end_to_end == pytest.approx(0.75)
    resumed = details(run, reference.model_copy(update={"resumed_after_epoch": 2}), evaluation, None)
    assert resumed.speedup_end_to_end is None, "a resumed job did not run end to end"


def test_timing_data_says_it_is_real_pixels_of_a_dataset_or_drawn_from_the_seed():
    evaluation = Evaluation(train={}, reference={})
    pixels = record("ddp", 50, 2).model_copy(update={"workload": "resnet50"})
    row = compare(pixels, record("single", 100, 1), evaluation, None, None)
    assert row["data_origin"] == "pixels of miniImageNet SAMPLE, 2,000 of 60,000"
    drawn = pixels.model_copy(
        update={"data_provenance": None, "data_origin": "synthetic: 8 random images; drawn from seed 0"}
    )
    assert compare(drawn, record("single", 100, 1), evaluation, None, None)["data_origin"] == "synthetic, seeded"


def test_a_benchmark_timed_at_another_scale_is_not_the_headline():
    """On a GPU the cells time the seeds' sizes (benchmark.scale_on): a quick run's speedup then comes from the
    training runs, for a ratio at another batch is another answer."""
    evaluation = Evaluation.model_validate({"train": {}, "reference": {}})
    timed = benchmark(0.5).model_copy(update={"scale": "paper"})
    both = speedups(record("ddp", 50, 2), record("single", 100, 1), timed)
    assert both.speedup_from == "training_runs" and both.speedup_benchmark is None
    assert compare(record("ddp", 50, 2), record("single", 100, 1), evaluation, timed, None)["speedup_verdict"] is None
