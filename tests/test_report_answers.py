"""Each seed's question, and the answer computed from the numbers: which strategy is fastest, with its spread."""

from parabench.engine.cells import Cell, CellRuns
from parabench.records import CellsSummary, CurveFigures, SkippedCurve
from parabench.report.answers import answer, pair_sentence, sweep_sentence
from parabench.report.benchmark import summarize_cells
from parabench.strategies.registry import STRATEGIES
from parabench.workloads import WORKLOADS
from tests.setups import cpu_setup, tiny_plan
from tests.test_benchmark_report import steady


def benchmark(times: dict[str, float], ceiling: float | None = None) -> CellsSummary:
    """The benchmark's results for cells label -> median step (3 turns of 8 steps, -+0.25%), with the A/A control
    and, when given, a ceiling's median step."""
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    entries = [
        CellRuns(
            Cell("fashion_mnist", label.removesuffix("_control"), control=label.endswith("_control")),
            tiny_plan(label.removesuffix("_control"), two, "benchmark", batch_size=64),
            run=steady(seconds, seconds / 400),
        )
        for label, seconds in times.items()
    ]
    entries.append(CellRuns(Cell("fashion_mnist", "dp"), None, skipped_reason="dp needs CUDA devices: use ddp\n(more)"))
    if ceiling is not None:
        plan = tiny_plan("single", two, "benchmark", batch_size=64).model_copy(update={"copies": 2})
        entries.append(CellRuns(Cell("fashion_mnist", "single", copies=2), plan, run=steady(ceiling, ceiling / 400)))
    return summarize_cells(entries)


FASHION_MNIST = WORKLOADS["fashion_mnist"].question
BENCHMARK = benchmark({"single": 0.2, "single_control": 0.201, "ddp": 0.1, "allreduce": 0.125}, ceiling=0.08)


def test_every_workload_has_its_seed_question_comparing_strategies_that_exist():
    questions = [workload.question for workload in WORKLOADS.values()]
    assert sorted(question.seed for question in questions) == ["000", "001", "002", "003"]
    compared = {name for question in questions for pair in question.compared for name in pair}
    assert compared and compared <= set(STRATEGIES)


def test_the_answer_names_the_fastest_strategy_beyond_the_noise_and_what_communication_costs():
    text = answer(
        "fashion_mnist",
        FASHION_MNIST,
        BENCHMARK,
        "no detectable difference between ddp and single (-0.001, 95% -0.005 to +0.003)",
        {},
    )
    assert text.startswith("The fastest strategy here is ddp: 640 samples/s, 2.00x ("), "the ceiling is a bound"
    assert "single, ahead of allreduce by 1.25x (" in text
    assert "Timed twice as two cells in two processes, single against itself came out at 0.995x" in text, (
        "the A/A control"
    )
    assert "ddp reaches 80% (" in text and "of what independent copies manage side by side" in text
    assert text.endswith(" No detectable difference between ddp and single (-0.001, 95% -0.005 to +0.003).")


def test_strategies_within_the_noise_are_named_as_a_tie():
    tied = benchmark({"single": 0.2, "single_control": 0.206, "ddp": 0.1, "allreduce": 0.101})
    assert answer("fashion_mnist", FASHION_MNIST, tied, None, {}).startswith(
        "No strategy is fastest beyond the noise: ddp, allreduce are within it of each other (ddp 2.00x ("
    )


def test_a_comparison_with_a_strategy_that_could_not_run_says_why():
    assert pair_sentence(BENCHMARK, "ddp", "dp") == (
        "ddp against dp: dp did not run here (dp needs CUDA devices: use ddp)."
    )
    assert pair_sentence(BENCHMARK, "allreduce", "ddp").startswith("allreduce trains at 0.80x (")
    assert pair_sentence(BENCHMARK, "allreduce", "ddp").endswith("the rate of ddp: slower than ddp.")
    assert "fsdp did not run here (not in benchmark.strategies)" in pair_sentence(BENCHMARK, "fsdp", "ddp")


def test_the_sweep_answer_gives_each_curve_s_best_split_size():
    best = {"status": "ran", "best_median_s": 0.1, "largest_value": 24, "speedup_vs_largest_value": 1.2}
    curves = {
        "gpipe": CurveFigures(**best, best_value=4, speedup=1.1, speedup_vs_model_parallel=1.6),
        "1f1b": CurveFigures(**best, best_value=8, speedup=None, speedup_vs_model_parallel=None),
        "inprocess": SkippedCurve(status="skipped"),
    }
    assert sweep_sentence("split_size", "pipeline.split_size.resnet50", curves) == (
        "Sweep split_size: gpipe is fastest at pipeline.split_size.resnet50=4 (1.10x single, 1.60x "
        "model_parallel); 1f1b is fastest at pipeline.split_size.resnet50=8; inprocess ran no value on this "
        "hardware (its cells were skipped: results/sweep/ says why)."
    ), "a curve whose every cell was skipped (e.g. accumulate, which the pipeline refuses) says so"


def test_where_single_is_fastest_the_answer_says_so_and_names_the_closest():
    slower = benchmark({"single": 0.2, "single_control": 0.2, "ddp": 0.25})
    assert answer("fashion_mnist", FASHION_MNIST, slower, None, {}).startswith(
        "No strategy beats single here (320 samples/s). The closest is ddp, at 0.80x ("
    )


def test_without_single_no_speedup_is_claimed():
    text = answer("resnet50", WORKLOADS["resnet50"].question, benchmark({"ddp": 0.1}), None, {})
    assert text.startswith("No resnet50 benchmark cell of `single` ran here")
