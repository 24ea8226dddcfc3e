"""Benchmark figures from recorded cell runs: medians, intervals over turns, speedup, efficiency, the ceiling, skips,
disturbed steps left out; and the runner's turns: their order, their length, when a cell stops taking them."""

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
    turn_length,
    write_cell_runs,
)
from parabench.records import CellRun, CellSetup, CellTurn, SkippedCell, StepSigns
from parabench.report.answers import noise_sentence
from parabench.report.benchmark import skipped, summarize_cells, table
from parabench.report.benchmark_figure import draw
from parabench.report.time_split import time_split
from parabench.runtime.step_signs import kept_steps
from parabench.strategies.registry import STRATEGIES
from tests.setups import cpu_setup, tiny_plan


def turn(step_seconds: list[float], ranks: int, other: float = 0.0) -> CellTurn:
    """A cell's recorded turn; rank 0 is the slowest, each other rank takes 90% of its time: input 10%, forward and
    backward 70%, the optimizer 20% of each rank's own step. Each rank used its steps' time on a CPU; other programs
    took `other` of a CPU besides."""
    return CellTurn(
        step_durations=step_seconds,
        phase_durations=[
            [phases(time * (1.0 if rank == 0 else 0.9)) for time in step_seconds] for rank in range(ranks)
        ],
        signs=[[signs(time, ranks, other) for time in step_seconds] for _ in range(ranks)],
    )


def signs(wall: float, ranks: int, other: float) -> StepSigns:
    """A rank's signs of a step: a CPU's worth of its own time, the machine busy with every rank and `other` more."""
    return StepSigns(
        wall_s=wall,
        cpu_s=wall,
        machine_busy_s=(ranks + other) * wall,
        waited_s=0.0,
        steal_s=0.0,
        involuntary_switches=0,
        minor_faults=0,
        major_faults=0,
        collections=0,
    )


def cell_run(turns: list[CellTurn], allreduce_s: float | None = None) -> CellRun:
    """A cell's run of these turns, set up as a small model's."""
    ranks = len(turns[0].phase_durations)
    return CellRun(
        unit="sample",
        setup_s=1.0,
        turns=turns,
        gradient_allreduce_s=allreduce_s,
        peak_memory_mb={f"rank{r}": 100.0 + r for r in range(ranks)},
        saved_for_backward_mb={f"rank{r}": 10.0 for r in range(ranks)},
        input_bytes_per_unit=28 * 28 * 4.0,
        output_bytes_per_unit=10 * 4.0,
        warmup_step_durations=[2 * turns[0].step_durations[0]],
        memory_kind="cpu_max_rss",
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
        run=cell_run([turn([0.2, 0.2, 0.3, 0.2, 0.2], 1), turn([0.2, 0.4, 0.2], 1)]),
    )
    ddp = CellRuns(
        Cell("fashion_mnist", "ddp"),
        tiny_plan("ddp", two, "benchmark", batch_size=64),
        run=cell_run([turn([0.1] * 5, 2), turn([0.2, 0.1, 0.2], 2)], allreduce_s=0.02),
    )
    ceiling_plan = tiny_plan("single", two, "benchmark", batch_size=64).model_copy(update={"copies": 2})
    ceiling = CellRuns(
        Cell("fashion_mnist", "single", copies=2),
        ceiling_plan,
        run=cell_run([turn([0.08, 0.08, 0.08], 2), turn([0.08, 0.08, 0.08], 2)]),
    )
    dp = CellRuns(Cell("fashion_mnist", "dp"), None, skipped_reason="needs CUDA; use ddp")
    cut_plan = tiny_plan("model_parallel", two, "benchmark", batch_size=64)
    cut = CellRuns(
        Cell("fashion_mnist", "model_parallel"),
        cut_plan,
        run=cell_run([turn([0.1, 0.1, 0.1], 1), turn([0.1, 0.1, 0.1], 1)]),
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
    assert single.rate_ci95[0] <= single.rate <= single.rate_ci95[1]
    assert ddp.rate == 64 / 0.1
    # Paired by turn: single's medians over ddp's, 0.2 / 0.1 then 0.2 / 0.2, whose geometric mean is sqrt(2).
    assert ddp.speedup == pytest.approx(2**0.5) and ddp.scaling_efficiency == pytest.approx(2**0.5 / 2)
    assert ceiling.speedup == pytest.approx(2.5) and ceiling.devices == 2
    assert ddp.efficiency_vs_ceiling == pytest.approx((0.08 / 0.1 * 0.08 / 0.2) ** 0.5)
    cut = results["model_parallel"]
    assert cut.devices == 2 and cut.speedup == 2.0
    assert cut.efficiency_vs_ceiling is None, "a cut strategy changes the work: the ceiling does not bound it"
    assert single.efficiency_vs_ceiling is None, "one device is not compared with a two-device ceiling"
    assert ceiling.efficiency_vs_ceiling is None, "the ceiling is not a data-parallel strategy"
    assert ddp.devices_virtual is True and single.devices_virtual is False
    assert ddp.peak_memory_mb == {"rank0": 100.0, "rank1": 101.0}
    assert ddp.contended is False and ddp.disturbed_steps == {} and ddp.turns == 2
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
    skewed = turn([0.6, 0.6, 0.2], 1).model_copy(update={"phase_durations": [steps]})
    split = time_split(
        cell_run([skewed]), STRATEGIES["single"], communicates=False, data_parallel=False, compute_beside=None
    )
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
    strategy = STRATEGIES["pipeline" if "engine" in details else "model_parallel"]
    assert strategy.details_of(details).time_parts(forward_backward=0.2) == pytest.approx(expected)


def test_a_bound_above_the_measured_step_leaves_no_negative_part_and_the_split_says_it_is_off():
    staged = cell_run([turn([0.1, 0.1, 0.1], 1)]).model_copy(
        update={"strategy_details": {"stage_seconds": [0.2, 0.2], "devices_virtual": False}}
    )
    split = time_split(
        staged, STRATEGIES["model_parallel"], communicates=True, data_parallel=False, compute_beside=None
    )
    assert split["time_split_s"]["communication"] == 0 and split["time_split_adds_up"] is False


def test_a_data_parallel_cell_without_a_ceiling_keeps_its_communication_inside_forward_backward():
    ddp = entries()[1]
    split = summarize_cells([ddp]).cells["ddp"]
    assert set(split.time_split_s) == {"input", "forward_backward", "optimizer", "idle"}
    assert split.communication_share is None and split.communication_hidden_share is None


def test_a_disturbed_step_is_left_out_of_the_cell_s_figures_and_counted():
    """ddp's second turn: other programs took 40% of a CPU during its 0.9 s steps; its figures are its quiet steps'."""
    busy = entries()[1]
    busy.run = cell_run([turn([0.1] * 5, 2), turn([0.9, 0.9], 2, other=0.4), turn([0.1] * 3, 2)])
    ddp = summarize_cells([entries()[0], busy]).cells["ddp"]
    assert ddp.step_time_s.max == 0.1 and ddp.step_time_s.steps == 8
    assert ddp.disturbed_steps == {"other programs": 2} and ddp.contended is True, "2 of its 10 steps"
    assert ddp.step_durations_by_turn == [[0.1] * 5, [], [0.1] * 3]


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


def timing(**changes: float) -> CellTiming:
    """The cells' timing with `changes`."""
    values = {"warmup_steps": 1, "turn_steps": 1, "min_turns": 2, "max_turns": 6, "within": 0.5}
    return CellTiming(**{**values, "max_timed_s": 100.0, "min_turn_s": 0.0, **changes})


def test_a_cell_whose_steps_are_short_takes_longer_turns_in_proportion():
    """A GPU's 10 ms steps, one a turn, last 10 ms: 0.25 s takes 25 of them, at most 16 times turn_steps; a CPU's
    steps already long enough keep turn_steps."""
    setup = cell_run([turn([0.01], 1)]).model_copy(update={"warmup_step_durations": [0.5, 0.01]})
    assert turn_length(timing(min_turn_s=0.25, turn_steps=2), setup) == 26
    assert turn_length(timing(min_turn_s=0.25), setup) == 16
    assert turn_length(timing(min_turn_s=0.25), setup.model_copy(update={"warmup_step_durations": [0.3]})) == 1
    assert turn_length(timing(), setup) == 1


class ScriptedJobs:
    """CellJobs that hand out recorded step times, one step a turn, instead of timing anything: `times` label -> a
    function of the turn's number."""

    def __init__(self, times):
        self.times, self.jobs, self.taken = times, {}, []

    def __call__(self, scratch, what) -> "ScriptedJobs":
        return self

    def __enter__(self) -> "ScriptedJobs":
        return self

    def __exit__(self, *failure) -> None:
        return None

    def of(self, plan, owner="") -> "ScriptedJobs":
        self.jobs[(plan.strategy_name, owner)] = self
        return self

    def joined(self) -> float:
        return 0.0

    def stop(self) -> None:
        return None

    def setup(self, label, plan, warmup) -> CellSetup:
        return CellSetup.model_validate(cell_run([turn([0.1], 1)]).model_dump(exclude={"turns"}))

    def turn(self, label, steps) -> CellTurn:
        number = sum(taken == label for taken in self.taken)
        self.taken.append(label)
        return turn([self.times[label](number)], 1)


WANDER = [0.1, 0.3, 0.3, 0.1, 0.2, 0.1, 0.3]


def test_a_settled_cell_stops_taking_turns_while_single_and_the_unsettled_ones_go_on(monkeypatch):
    """ddp runs exactly twice single's speed: known within +-10% at the first look, after min_turns 4, it takes no
    more turns. allreduce's steps wander between 0.1 and 0.3 s: it goes on beside single, turn for turn, to the cap;
    ddp's 4 turns stay paired with single's first 4."""
    plans = {entry.cell.label: entry for entry in entries()}
    planned = [plans["single"], plans["ddp"], CellRuns(Cell("fashion_mnist", "allreduce"), plans["ddp"].plan)]
    planned[1].run = planned[0].run = None
    jobs = ScriptedJobs({"single": lambda n: 0.2, "ddp": lambda n: 0.1, "allreduce": lambda n: WANDER[n]})
    monkeypatch.setattr(cells, "CellJobs", jobs)
    stage = run_cells(planned, timing(min_turns=4, max_turns=7, within=0.1), "benchmark@fashion_mnist")
    assert jobs.taken[:6] == ["single", "ddp", "allreduce", "ddp", "allreduce", "single"], "rotated every turn"
    assert jobs.taken[12:] == ["single", "allreduce", "allreduce", "single", "single", "allreduce"]
    assert [len(entry.turns) for entry in planned] == [7, 4, 7] and stage.turns == 7
    assert planned[1].run.turns == planned[1].turns
    assert stage.timed_steps_s == pytest.approx(7 * 0.2 + 4 * 0.1 + sum(WANDER))


def test_turns_stop_once_every_speedup_is_known_within_its_goal(monkeypatch):
    """Steady cells: known within +-10% at the first look, after min_turns."""
    planned = entries()[:2]
    monkeypatch.setattr(cells, "CellJobs", ScriptedJobs({"single": lambda n: 0.2, "ddp": lambda n: 0.1}))
    stage = run_cells(planned, timing(min_turns=4, max_turns=20, within=0.1), "benchmark@fashion_mnist")
    assert stage.turns == 4 and [len(entry.turns) for entry in planned] == [4, 4]


def test_turns_stop_once_the_stage_has_timed_max_timed_s(monkeypatch):
    """Whatever the precision, no more turns once the timed steps add up to the stage's budget: 0.3 s a turn."""
    planned = entries()[:2]
    monkeypatch.setattr(cells, "CellJobs", ScriptedJobs({"single": lambda n: 0.2, "ddp": lambda n: 0.1}))
    stage = run_cells(planned, timing(min_turns=4, max_turns=7, max_timed_s=0.5), "benchmark@fashion_mnist")
    assert stage.turns == 2 and [len(entry.turns) for entry in planned] == [2, 2]


def test_cell_labels_name_their_overrides():
    assert Cell("resnet50", "pipeline", (("pipeline.split_size", 12),)).label == "pipeline pipeline.split_size=12"
    assert Cell("fashion_mnist", "single", copies=2).label == "ceiling"


def steady(seconds: float, spread: float, turns: int = 3, steps: int = 8) -> CellRun:
    """`turns` turns of one rank whose steps alternate `seconds` -+ `spread`."""
    return cell_run(
        [turn([seconds + (spread if step % 2 else -spread) for step in range(steps)], 1) for _ in range(turns)]
    )


def measured(times: dict[str, tuple[str, float, float]], smallest_difference: float = 0.0, devices: int = 2) -> dict:
    """The summary of cells label -> (strategy, median step, spread of its steps), on `devices` CPU devices."""
    setup = cpu_setup(devices=devices, batch_shape=(64, 1, 28, 28))
    entries = [
        CellRuns(
            Cell("fashion_mnist", strategy, control=label == "single_control"),
            tiny_plan(strategy, setup, "benchmark", batch_size=64),
            run=steady(seconds, spread),
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
            run=steady(0.2, 0.002),
        ),
        CellRuns(
            Cell("fashion_mnist", "single", control=True),
            tiny_plan("single", two, "benchmark", batch_size=64),
            run=steady(0.2, 0.002),
        ),
        CellRuns(
            Cell("fashion_mnist", "ddp"),
            tiny_plan("ddp", two, "benchmark", batch_size=64),
            run=cell_run([turn([0.1] * 8, 2) for _ in range(3)]),
        ),
        CellRuns(
            Cell("fashion_mnist", "single", copies=2),
            ceiling_plan,
            run=cell_run([turn([0.15] * 8, 2) for _ in range(3)]),
        ),
        CellRuns(
            Cell("fashion_mnist", "model_parallel"),
            tiny_plan("model_parallel", two, "benchmark", batch_size=64),
            run=steady(0.17, 0.002),
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


def test_the_ranking_follows_the_paired_speedup_when_turns_of_unequal_length_reverse_the_pooled_median():
    """dp is 4-5% faster than single in each of three turns, but single's fast turn holds most of its steps and dp's
    slow one most of its: the pooled medians say the opposite. The ranking and its margin follow the paired speedups
    the page shows. (One rank of ddp stands in for dp, which plans on CUDA alone.)"""
    one = cpu_setup(devices=1, batch_shape=(64, 1, 28, 28))
    turns = {
        "single": [(10, 0.0075), (2, 0.0100), (2, 0.0120)],
        "single_control": [(10, 0.0075), (2, 0.0100), (2, 0.0120)],
        "dp": [(2, 0.0072), (2, 0.0095), (10, 0.0115)],
    }
    entries = [
        CellRuns(
            Cell("fashion_mnist", "ddp" if label == "dp" else "single", control=label == "single_control"),
            tiny_plan("ddp" if label == "dp" else "single", one, "benchmark", batch_size=64),
            run=cell_run([turn([seconds] * steps, 1) for steps, seconds in by_turn]),
        )
        for label, by_turn in turns.items()
    ]
    summary = summarize_cells(entries, smallest_difference=0.05)  # within it: one rank faster is no flag
    fast, other = summary.cells["ddp"], summary.cells["single"]
    assert fast.rate < other.rate and fast.speedup > 1, "the pooled rate and the paired speedup disagree here"
    assert summary.ranking.best_measured == "ddp" and summary.ranking.runner_up == "single"
    assert summary.ranking.margin > 1


def test_the_control_runs_next_to_single_in_every_turn():
    labels = [cell.label for cell in benchmark_cells("fashion_mnist", ["dp", "single", "ddp", "allreduce"], 2)]
    assert labels == ["dp", "single", "single_control", "ddp", "allreduce", "ceiling"]


def test_a_cell_none_of_whose_kept_turns_pairs_with_single_s_is_not_yet_known_within_its_goal():
    """Turns of one step each: other programs took the CPU in single's last two and in the cell's first two, so no turn
    of the one kept a step where the other did: no ratio is known yet, and the turns go on (rather than a ratio of
    nothing)."""
    quiet, busy = turn([0.1], 1), turn([0.1], 1, other=1.5)
    reference = CellRuns(Cell("fashion_mnist", "single"), None, turns=[quiet, quiet, busy, busy])
    entry = CellRuns(Cell("fashion_mnist", "ddp"), None, turns=[busy, busy, quiet, quiet])
    assert kept_steps(reference.turns) == [[0.1], [0.1], [], []] and kept_steps(entry.turns) == [[], [], [0.1], [0.1]]
    assert not cells.known_within(entry, reference, within=0.5)
    assert cells.known_within(entry, None, within=0.5), "its own median is known: its steps agree"
    alike = CellRuns(Cell("fashion_mnist", "ddp"), None, turns=[quiet, quiet, busy, busy])
    assert cells.known_within(alike, reference, within=0.5)
