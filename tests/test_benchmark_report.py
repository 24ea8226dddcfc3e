"""Benchmark figures from recorded cell runs: medians, spread over rounds, speedup, efficiency, the ceiling, skips;
and the runner's rounds: their order, their length, a disturbed run timed again."""

import pytest

from parabench.config import CellTiming
from parabench.engine import cells
from parabench.engine.cells import (
    Cell,
    CellRuns,
    StageTime,
    benchmark_cells,
    interleaved,
    read_cell_runs,
    run_cells,
    run_length,
    write_cell_runs,
)
from parabench.records import CellRun, SkippedCell
from parabench.report.answers import noise_sentence
from parabench.report.benchmark import compact, skipped, summarize_cells, table
from parabench.report.benchmark_figure import draw
from parabench.report.time_split import cut_parts, time_split
from parabench.stats import NO_DIFFERENCE
from tests.setups import cpu_setup, tiny_plan


def run(step_seconds: list[float], ranks: int, other: float = 0.0, allreduce_s: float | None = None) -> CellRun:
    """A cell's recorded run; rank 0 is the slowest, each other rank takes 90% of its time: input 10%, forward and
    backward 70%, the optimizer 20% of each rank's own step."""
    return CellRun(
        unit="sample",
        step_durations=step_seconds,
        phase_durations=[
            [phases(time * (1.0 if rank == 0 else 0.9)) for time in step_seconds] for rank in range(ranks)
        ],
        gradient_allreduce_s=allreduce_s,
        peak_memory_mb={f"rank{r}": 100.0 + r for r in range(ranks)},
        saved_for_backward_mb={f"rank{r}": 10.0 for r in range(ranks)},
        input_bytes_per_unit=28 * 28 * 4.0,
        output_bytes_per_unit=10 * 4.0,
        warmup_step_durations=[2 * step_seconds[0]],
        memory_kind="cpu_max_rss",
        other_cpu_share=other,
        strategy_details={},
        parameters=1_000_000,
        gradient_bytes=[3_200_000, 800_000],  # a weight and a smaller tensor after it: 4 bytes a parameter
        buffer_bytes=0,
        transform_units_per_s=1000.0,
    )


def phases(own: float) -> dict[str, float]:
    return {"input": 0.1 * own, "forward_backward": 0.7 * own, "optimizer": 0.2 * own}


def entries() -> list[CellRuns]:
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    single = CellRuns(
        Cell("fashion_mnist", "single"),
        tiny_plan("single", two, "benchmark", batch_size=64),
        runs=[run([0.2, 0.2, 0.3, 0.2, 0.2], 1), run([0.2, 0.4, 0.2], 1)],
    )
    ddp = CellRuns(
        Cell("fashion_mnist", "ddp"),
        tiny_plan("ddp", two, "benchmark", batch_size=64),
        runs=[run([0.1] * 5, 2, allreduce_s=0.02), run([0.2, 0.1, 0.2], 2, other=0.3)],
    )
    ceiling_plan = tiny_plan("single", two, "benchmark", batch_size=64).model_copy(update={"copies": 2})
    ceiling = CellRuns(
        Cell("fashion_mnist", "single", copies=2),
        ceiling_plan,
        runs=[run([0.08, 0.08, 0.08], 2), run([0.08, 0.08, 0.08], 2)],
    )
    dp = CellRuns(Cell("fashion_mnist", "dp"), None, skipped_reason="needs CUDA; use ddp")
    cut_plan = tiny_plan("model_parallel", two, "benchmark", batch_size=64)
    cut = CellRuns(
        Cell("fashion_mnist", "model_parallel"), cut_plan, runs=[run([0.1, 0.1, 0.1], 1), run([0.1, 0.1, 0.1], 1)]
    )
    return [single, ddp, ceiling, dp, cut]


def test_what_a_timing_stage_measured_reads_back_as_it_was_summarised(tmp_path):
    """benchmark@ and sweep@ write their cells as timed; speedup@ and sweep_summary@ summarise what they read back."""
    timed = entries()
    timed[1].cell = Cell("fashion_mnist", "ddp", overrides=(("pipeline.split_size.fashion_mnist", 16),))
    stage = StageTime(wall_s=10.0, start_up_s=1.0, timed_steps_s=5.0, jobs_started=2)
    write_cell_runs(tmp_path / "cells.json", timed, stage)
    measured = read_cell_runs(tmp_path / "cells.json")
    assert measured.cells == timed and measured.stage == stage
    assert measured.environment["cpu_model"] and measured.environment["torch"], "the machine that timed them"
    assert summarize_cells(measured.cells) == summarize_cells(timed)


def test_medians_spread_speedup_efficiency_and_ceiling():
    results = summarize_cells(entries()).cells
    single, ddp, ceiling = results["single"], results["ddp"], results["ceiling"]
    assert single.rate == 64 / 0.2  # median of all eight steps
    assert (single.rate_slowest_round, single.rate_fastest_round) == (64 / 0.2, 64 / 0.2)
    assert ddp.rate == 64 / 0.1
    assert (ddp.rate_slowest_round, ddp.rate_fastest_round) == (64 / 0.2, 64 / 0.1)
    # Paired by round: single's medians over ddp's, 0.2 / 0.1 then 0.2 / 0.2, whose median is their mean.
    assert ddp.speedup == 1.5 and ddp.scaling_efficiency == 0.75
    assert ceiling.speedup == pytest.approx(2.5) and ceiling.devices == 2
    assert ddp.efficiency_vs_ceiling == pytest.approx((0.08 / 0.1 + 0.08 / 0.2) / 2)
    cut = results["model_parallel"]
    assert cut.devices == 2 and cut.speedup == 2.0
    assert cut.efficiency_vs_ceiling is None, "a cut strategy changes the work: the ceiling does not bound it"
    assert single.efficiency_vs_ceiling is None, "one device is not compared with a two-device ceiling"
    assert ceiling.efficiency_vs_ceiling is None, "the ceiling is not a data-parallel strategy"
    assert ddp.devices_virtual is True and single.devices_virtual is False
    assert ddp.peak_memory_mb == {"rank0": 100.0, "rank1": 101.0}
    assert ddp.contended is True and single.contended is False, "another program took 30% of the CPU"
    assert ddp.environment["processes"] == 2 and "cpu_capability" in ddp.environment
    assert ddp.environment["transform_samples_per_s_per_process"] == 1000.0, "the input path beside the step"
    assert ddp.environment["train_samples_per_s_per_process"] == 64 / 0.1 / 2


def test_each_cell_s_median_step_splits_into_parts_that_add_up_to_it():
    results = summarize_cells(entries()).cells
    single, ddp, ceiling, cut = (results[label] for label in ("single", "ddp", "ceiling", "model_parallel"))
    assert single.time_split_s == pytest.approx({"input": 0.02, "compute": 0.14, "optimizer": 0.04, "idle": 0.0})
    # the other rank's 90%: phases are the ranks' mean, idle its 10% of the step averaged over the two ranks
    assert ceiling.time_split_s == pytest.approx(
        {"input": 0.0076, "compute": 0.0532, "optimizer": 0.0152, "idle": 0.004}
    )
    # ddp's forward and backward (0.0665) = the ceiling copies' (0.0532, the same work under the same load) + the
    # communication they lack (0.0133); of a full all-reduce of 0.02, a third was hidden behind the backward pass
    assert ddp.time_split_s == pytest.approx(
        {"input": 0.0095, "compute": 0.0532, "communication": 0.0133, "optimizer": 0.019, "idle": 0.005}
    )
    assert ddp.communication_share == pytest.approx(0.133)
    assert ddp.communication_hidden_share == pytest.approx(1 - 0.0133 / 0.02)
    assert ddp.gradient_allreduce_s == 0.02
    assert set(cut.time_split_s) == {"input", "forward_backward", "optimizer", "idle"}, (
        "a cut strategy's transfers stay inside its forward and backward"
    )
    assert cut.communication_share is None and single.communication_share is None
    for figures in (single, ddp, ceiling, cut):
        assert figures.time_split_adds_up and abs(figures.time_split_vs_step) < 1e-9


def test_parts_that_do_not_describe_the_median_step_are_flagged():
    """Each step's parts add up to it, but the typical steps (here all three) average 0.47 s where the median step
    takes 0.6 s: the split is 22% short, and says so."""
    steps = [
        {"input": 0.5, "forward_backward": 0.1, "optimizer": 0.0},
        {"input": 0.1, "forward_backward": 0.5, "optimizer": 0.0},
        {"input": 0.1, "forward_backward": 0.1, "optimizer": 0.0},
    ]
    skewed = run([0.6, 0.6, 0.2], 1).model_copy(update={"phase_durations": [steps]})
    split = time_split([skewed], "single", communicates=False, data_parallel=False, compute_beside=None)
    assert split["time_split_vs_step"] == pytest.approx(1.4 / 3 / 0.6 - 1) and split["time_split_adds_up"] is False


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        # 4 micro-batches through stages of 0.01 s and 0.03 s that overlap: the bound 0.13 s = even work 4 x 0.02 +
        # imbalance 4 x 0.01 + bubble 0.01 (the other stage, while the slowest waits); 0.07 s beyond it moved
        # activations and gradients
        (
            {"engine": "distributed", "micro_batches": 4, "stage_seconds": [0.01, 0.03]},
            {"compute": 0.08, "imbalance": 0.04, "bubble": 0.01, "communication": 0.07},
        ),
        # three equal stages of 0.02 s: the bubble is torchgpipe's (S - 1) x the stage
        (
            {"engine": "distributed", "micro_batches": 4, "stage_seconds": [0.02, 0.02, 0.02]},
            {"compute": 0.08, "imbalance": 0.0, "bubble": 0.04, "communication": 0.08},
        ),
        # in one process on one CPU the stages run in turn on the same cores and nothing moves: all of it is compute
        (
            {"engine": "inprocess", "devices_virtual": True, "micro_batches": 4, "stage_seconds": [0.01, 0.03]},
            {"compute": 0.2},
        ),
        ({"devices_virtual": True, "stage_seconds": [0.05, 0.1]}, {"compute": 0.2}),
        # model_parallel on real devices: the whole batch once through both stages, in turn, then the copies between
        ({"devices_virtual": False, "stage_seconds": [0.05, 0.1]}, {"compute": 0.15, "communication": 0.05}),
    ],
)
def test_a_cut_model_s_forward_backward_splits_by_its_stages_seconds(details, expected):
    assert cut_parts(details, forward_backward=0.2) == pytest.approx(expected)


def test_a_bound_above_the_measured_step_leaves_no_negative_part_and_the_split_says_it_is_off():
    staged = run([0.1, 0.1, 0.1], 1).model_copy(
        update={"strategy_details": {"stage_seconds": [0.2, 0.2], "devices_virtual": False}}
    )
    split = time_split([staged], "model_parallel", communicates=True, data_parallel=False, compute_beside=None)
    assert split["time_split_s"]["communication"] == 0 and split["time_split_adds_up"] is False


def test_a_data_parallel_cell_without_a_ceiling_keeps_its_communication_inside_forward_backward():
    ddp = entries()[1]
    split = summarize_cells([ddp]).cells["ddp"]
    assert set(split.time_split_s) == {"input", "forward_backward", "optimizer", "idle"}
    assert split.communication_share is None and split.communication_hidden_share is None


def test_compact_metrics_hold_a_few_numbers():
    results = summarize_cells(entries()).cells
    assert compact(results["ddp"]) == {
        "status": "ran",
        "samples_per_s": 640.0,
        "speedup": 1.5,
        "speedup_verdict": NO_DIFFERENCE,  # its two rounds: 2x, then 1x; the interval holds both
        "scaling_efficiency": 0.75,
        "efficiency_vs_ceiling": pytest.approx(0.6),
        "communication_share": pytest.approx(0.133),
        "contended": True,
    }
    assert compact(results["dp"]) == {"status": "skipped"}


def test_skipped_cell_has_a_reason_and_no_number(tmp_path):
    results = summarize_cells(entries()).cells
    assert results["dp"] == SkippedCell(status="skipped", reason="needs CUDA; use ddp")
    rows = table(results)
    assert list(rows["cell"]) == ["single", "ddp", "ceiling", "model_parallel"]
    assert skipped(results) == [("dp", "needs CUDA; use ddp")]
    draw("fashion_mnist", rows, skipped(results), "a machine", tmp_path / "figure.png")
    assert (tmp_path / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rounds_rotate_the_order():
    three = entries()[:3]
    orders = [[entry.cell.label for entry in interleaved(three, r)] for r in range(3)]
    assert orders == [["single", "ddp", "ceiling"], ["ddp", "ceiling", "single"], ["ceiling", "single", "ddp"]]


def test_a_run_timed_for_less_than_min_timed_s_makes_the_cell_s_next_runs_longer_in_proportion():
    """A GPU's 10 ms steps, timed 2 at a time, last 20 ms: 0.25 s takes 13 times the steps, warm-up included; a CPU's
    steps already long enough keep timing's counts, and the growth stops at 16 times."""
    timing = CellTiming(
        rounds=3, max_rounds=3, median_within=0.03, warmup_steps=1, timed_steps=2, min_timed_s=0.25, workers="warm"
    )
    assert run_length(timing, None) == (1, 2)
    assert run_length(timing, run([0.010, 0.010], ranks=1)) == (13, 26)
    assert run_length(timing, run([0.2, 0.3], ranks=1)) == (1, 2)
    assert run_length(timing, run([0.0001, 0.0001], ranks=1)) == (16, 32)
    assert run_length(timing.model_copy(update={"min_timed_s": 0.0}), run([0.010, 0.010], ranks=1)) == (1, 2)


class ScriptedJobs:
    """CellJobs that hand out recorded runs in order instead of timing anything."""

    def __init__(self, runs: list[CellRun]):
        self.runs, self.start_up_s, self.started = runs, 0.0, 0

    def __call__(self, scratch, workers, what) -> "ScriptedJobs":
        return self

    def __enter__(self) -> "ScriptedJobs":
        return self

    def __exit__(self, *failure) -> None:
        return None

    def measure(self, plan, warmup, steps, apart=False, count_kept=False) -> CellRun:
        return self.runs.pop(0)


def test_a_run_disturbed_by_other_programs_is_timed_again_in_its_place(monkeypatch):
    timing = CellTiming(
        rounds=2, max_rounds=2, median_within=0.5, warmup_steps=1, timed_steps=2, min_timed_s=0.0, workers="warm"
    )
    single = entries()[0]
    single.runs = []
    busy, quiet = run([0.9, 0.9], ranks=1, other=0.4), run([0.2, 0.2], ranks=1, other=0.02)
    unmeasured = run([0.2, 0.3], ranks=1, other=0.0).model_copy(update={"other_cpu_share": None})
    jobs = ScriptedJobs([busy, quiet, unmeasured])
    monkeypatch.setattr(cells, "CellJobs", jobs)
    stage = run_cells([single], timing, "benchmark@fashion_mnist")
    assert single.runs == [quiet, unmeasured], "the disturbed run is replaced; a run too short to tell is kept"
    assert stage.runs_disturbed == 1 and stage.timed_steps_s == pytest.approx(1.8 + 0.4 + 0.5)
    assert not jobs.runs


def test_cell_labels_name_their_overrides():
    assert Cell("resnet50", "pipeline", (("pipeline.split_size", 12),)).label == "pipeline pipeline.split_size=12"
    assert Cell("fashion_mnist", "single", copies=2).label == "ceiling"


def steady(seconds: float, spread: float, rounds: int = 3, steps: int = 8) -> list[dict]:
    """`rounds` runs of one rank whose steps alternate `seconds` -+ `spread`."""
    return [run([seconds + (spread if step % 2 else -spread) for step in range(steps)], 1) for _ in range(rounds)]


def measured(times: dict[str, tuple[str, float, float]], smallest_difference: float = 0.0, devices: int = 2) -> dict:
    """The summary of cells label -> (strategy, median step, spread of its steps), on `devices` CPU devices."""
    setup = cpu_setup(devices=devices, batch_shape=(64, 1, 28, 28))
    entries = [
        CellRuns(
            Cell("fashion_mnist", strategy, control=label == "single_control"),
            tiny_plan(strategy, setup, "benchmark", batch_size=64),
            runs=steady(seconds, spread),
        )
        for label, (strategy, seconds, spread) in times.items()
    ]
    return summarize_cells(entries, smallest_difference)


def test_the_a_a_control_sets_the_noise_floor_and_a_speedup_within_it_is_no_difference():
    summary = measured(
        {
            "single": ("single", 0.200, 0.0005),
            "single_control": ("single", 0.206, 0.0005),
            "ddp": ("ddp", 0.196, 0.0005),
            "allreduce": ("allreduce", 0.150, 0.0005),
        }
    )
    noise, cells = summary.noise, summary.cells
    assert noise.aa_ratio == pytest.approx(0.2 / 0.206) and noise.aa_ci95[0] <= noise.aa_ratio
    assert noise.floor == pytest.approx(1 - 0.2 / 0.206), "how far the control's ratio is from 1"
    assert cells["ddp"].speedup_ci95[0] > 1, "ddp's interval alone excludes 1 ..."
    assert cells["ddp"].speedup_verdict == "no detectable difference", "... but it is within the A/A noise"
    assert cells["allreduce"].speedup_verdict == "faster"
    assert summary.ranking.fastest == "allreduce" and summary.ranking.margin_ci95[0] > 1


def test_a_difference_below_the_smallest_difference_is_not_named_though_beyond_the_a_a_floor():
    times = {
        "single": ("single", 0.200, 0.0005),
        "single_control": ("single", 0.201, 0.0005),
        "allreduce": ("allreduce", 0.192, 0.0005),
    }
    alone, raised = measured(times), measured(times, smallest_difference=0.05)
    assert alone.noise.floor < 0.02 and alone.cells["allreduce"].speedup_verdict == "faster"
    assert raised.noise.aa_floor == alone.noise.floor and raised.noise.floor == 0.05
    assert raised.cells["allreduce"].speedup_verdict == "no detectable difference"
    assert raised.ranking.fastest is None and raised.ranking.tied == ["allreduce", "single"]
    assert "a difference within 5.0% (smallest_difference" in noise_sentence(raised.noise)
    assert "is this machine's noise" in noise_sentence(measured(times, smallest_difference=0.001).noise)


def test_strategies_within_the_noise_of_each_other_are_a_tie_not_a_fastest():
    summary = measured(
        {
            "single": ("single", 0.200, 0.002),
            "single_control": ("single", 0.201, 0.002),
            "ddp": ("ddp", 0.150, 0.002),
            "allreduce": ("allreduce", 0.151, 0.002),
        }
    )
    assert summary.ranking.fastest is None and summary.ranking.tied == ["ddp", "allreduce"]


def test_a_data_parallel_cell_above_its_ceiling_and_a_one_process_cut_unlike_single_are_flagged():
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    ceiling_plan = tiny_plan("single", two, "benchmark", batch_size=64).model_copy(update={"copies": 2})
    entries = [
        CellRuns(
            Cell("fashion_mnist", "single"),
            tiny_plan("single", two, "benchmark", batch_size=64),
            runs=steady(0.2, 0.002),
        ),
        CellRuns(
            Cell("fashion_mnist", "single", control=True),
            tiny_plan("single", two, "benchmark", batch_size=64),
            runs=steady(0.2, 0.002),
        ),
        CellRuns(
            Cell("fashion_mnist", "ddp"),
            tiny_plan("ddp", two, "benchmark", batch_size=64),
            runs=[run([0.1] * 8, 2) for _ in range(3)],
        ),
        CellRuns(Cell("fashion_mnist", "single", copies=2), ceiling_plan, runs=[run([0.15] * 8, 2) for _ in range(3)]),
        CellRuns(
            Cell("fashion_mnist", "model_parallel"),
            tiny_plan("model_parallel", two, "benchmark", batch_size=64),
            runs=steady(0.17, 0.002),
        ),
    ]
    summary = summarize_cells(entries)
    assert set(summary.flags) == {"ddp", "model_parallel"}
    assert "above its ceiling" in summary.flags["ddp"] and "single's work" in summary.flags["model_parallel"]
    assert summary.ranking.fastest == "single", "flagged cells take no part in the ranking"


@pytest.mark.parametrize(("ddp_step", "flagged"), [(0.26, False), (0.15, True)])
def test_one_rank_of_a_data_parallel_strategy_is_flagged_only_when_faster_than_single(ddp_step, flagged):
    """On one GPU ddp is one rank doing single's work through its hooks: slower is what the wrapper costs (an
    answer, ranked), faster beyond the noise cannot be (flagged)."""
    summary = measured(
        {
            "single": ("single", 0.200, 0.002),
            "single_control": ("single", 0.201, 0.002),
            "ddp": ("ddp", ddp_step, 0.002),
        },
        devices=1,
    )
    assert summary.cells["ddp"].processes == 1
    assert ("ddp" in summary.flags) is flagged, summary.flags
    if flagged:
        assert "data-parallel wrapper" in summary.flags["ddp"]
    else:
        assert summary.ranking.fastest == "single" and summary.ranking.runner_up == "ddp"


def test_the_ranking_follows_the_paired_speedup_when_rounds_of_unequal_length_reverse_the_pooled_median():
    """fashion_mnist on an H200: single's third round, 10 fast steps, pulls its pooled median below dp's, yet dp was
    the faster in two rounds of three; the ranking and its margin must agree with the speedups the page shows. (One
    rank of ddp stands in for dp, which plans on CUDA alone.)"""
    one = cpu_setup(devices=1, batch_shape=(64, 1, 28, 28))
    rounds = {
        "single": [(2, 0.01257), (8, 0.01014), (10, 0.00748)],
        "single_control": [(2, 0.00984), (12, 0.00927), (12, 0.01079)],
        "dp": [(2, 0.01148), (10, 0.0095), (12, 0.01191)],
    }
    entries = [
        CellRuns(
            Cell("fashion_mnist", "ddp" if label == "dp" else "single", control=label == "single_control"),
            tiny_plan("ddp" if label == "dp" else "single", one, "benchmark", batch_size=64),
            runs=[run([seconds] * steps, 1) for steps, seconds in by_round],
        )
        for label, by_round in rounds.items()
    ]
    summary = summarize_cells(entries)
    fast, other = summary.cells["ddp"], summary.cells["single"]
    assert fast.rate < other.rate and fast.speedup > 1, "the pooled rate and the paired speedup disagree here"
    assert summary.ranking.best_measured == "ddp" and summary.ranking.runner_up == "single"
    assert summary.ranking.margin > 1


def test_the_control_sits_apart_from_single_in_the_benchmark_s_order():
    labels = [cell.label for cell in benchmark_cells("fashion_mnist", ["single", "dp", "ddp", "allreduce"], 2)]
    assert labels == ["single", "dp", "single_control", "ddp", "allreduce", "ceiling"]
