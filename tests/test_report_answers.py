"""Each seed's question, and the answer computed from the numbers: which strategy is fastest, with its spread."""

from parabench.report.answers import QUESTIONS, answer, pair_sentence, sweep_sentence
from parabench.workloads import WORKLOADS


def cell(rate: float, slowest: float, fastest: float, rounds: int = 2, **more) -> dict:
    return {"status": "ran", "unit": "sample", "rate": rate, "rate_slowest_round": slowest,
            "rate_fastest_round": fastest, "rounds": rounds,
            "step_time_s": {"median": 1.0, "p25": 0.9, "p75": 1.25}, **more}


BENCHMARK = {
    "single": cell(100.0, 95.0, 105.0),
    "ddp": cell(150.0, 140.0, 160.0, efficiency_vs_ceiling=0.8, communication_share=0.25),
    "allreduce": cell(120.0, 110.0, 125.0, efficiency_vs_ceiling=0.64, communication_share=0.4),
    "dp": {"status": "skipped", "reason": "dp needs CUDA devices: use ddp\n(more)"},
    "ceiling": cell(190.0, 185.0, 195.0),
}


def test_every_workload_has_its_seed_question():
    assert set(QUESTIONS) == set(WORKLOADS)
    assert sorted(question.seed for question in QUESTIONS.values()) == ["000", "001", "002", "003"]


def test_the_answer_names_the_fastest_strategy_with_its_spread_and_what_communication_costs():
    text = answer("fashion_mnist", BENCHMARK, {"quality": "no detectable difference between ddp and single "
                                                         "(-0.001, 95% -0.005 to +0.003)"}, {})
    assert text.startswith("The fastest strategy here is ddp: 150 samples/s, 1.50x (1.40x-1.60x over 2 rounds) "
                           "single."), "the ceiling is a bound, not a strategy"
    assert "ddp reaches 80% of what independent copies manage side by side" in text
    assert "communication not hidden behind compute takes 25% of its step" in text
    assert text.endswith(" No detectable difference between ddp and single (-0.001, 95% -0.005 to +0.003).")


def test_a_comparison_with_a_strategy_that_could_not_run_says_why():
    assert pair_sentence(BENCHMARK, "ddp", "dp") == ("ddp against dp: dp did not run here (dp needs CUDA devices: "
                                                     "use ddp).")
    ending = {**BENCHMARK, "dp": {"status": "skipped", "reason": "needs CUDA."}}
    assert pair_sentence(ending, "ddp", "dp").endswith("(needs CUDA)."), "one full stop"
    assert pair_sentence(BENCHMARK, "allreduce", "ddp") == "allreduce trains at 0.80x the rate of ddp."
    assert "fsdp did not run here (not in benchmark.strategies)" in pair_sentence(BENCHMARK, "fsdp", "ddp")


def test_the_sweep_answer_gives_each_curve_s_best_split_size():
    sweep = {"sweep": {"param": "pipeline.split_size.resnet50"},
             "curves": {"gpipe": {"best_value": 4, "speedup": 1.1, "speedup_vs_model_parallel": 1.6},
                        "1f1b": {"best_value": 8, "speedup": None, "speedup_vs_model_parallel": None}}}
    assert sweep_sentence("split_size_distributed", sweep) == (
        "Sweep split_size_distributed: gpipe is fastest at pipeline.split_size.resnet50=4 (1.10x single, 1.60x "
        "model_parallel); 1f1b is fastest at pipeline.split_size.resnet50=8.")


def test_where_single_is_fastest_the_answer_says_so_and_names_the_closest():
    slower = {label: cell(rate, rate * 0.9, rate * 1.1) for label, rate in (("single", 100.0), ("ddp", 90.0))}
    assert answer("fashion_mnist", slower, None, {}) == (
        "No strategy beats single here (100 samples/s). The closest is ddp, at 0.90x (0.81x-0.99x over 2 rounds) "
        "single.")


def test_one_round_gives_the_spread_of_its_steps():
    one_round = {"single": cell(100.0, 100.0, 100.0, rounds=1), "ddp": cell(150.0, 150.0, 150.0, rounds=1)}
    # ddp's median step is 1.0 s, its quartiles 0.9 s and 1.25 s: 1.5 x 1.0 / 1.25 to 1.5 x 1.0 / 0.9
    assert answer("fashion_mnist", one_round, None, {}).startswith(
        "The fastest strategy here is ddp: 150 samples/s, 1.50x (1.20x-1.67x, steps' p75-p25) single.")


def test_without_single_no_speedup_is_claimed():
    text = answer("resnet50", {"ddp": cell(10.0, 9.0, 11.0)}, None, {})
    assert text.startswith("No resnet50 benchmark cell of `single` ran here")
