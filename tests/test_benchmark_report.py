"""Benchmark figures from recorded runs: medians, spread over rounds, speedup against single, skipped strategies."""

from parabench.engine.benchmark import StrategyRuns, interleaved
from parabench.engine.plan import RunPlan
from parabench.report.benchmark import skipped, summarize_benchmark, table
from parabench.report.benchmark_figure import draw
from parabench.strategies import STRATEGIES
from parabench.workloads import WORKLOADS
from tests.setups import cpu_setup


def plan_for(strategy: str, devices: int) -> RunPlan:
    workload = WORKLOADS["fashion_mnist"]
    settings = workload.settings_model(
        epochs=1, batch_size=64, lr=0.1, momentum=0.0, weight_decay=0.0, scaling="strong", train_subset=None,
        eval_batch_size=64, warmup_steps=0, seed=0, width=4,
    )
    setup = cpu_setup(devices=devices)
    chosen = STRATEGIES[strategy]
    return RunPlan(role="benchmark", workload=workload, strategy=chosen, setup=setup, settings=settings,
                   processes=chosen.processes(setup), replicas=chosen.data_replicas(setup), global_batch=64, lr=0.1)


def run(step_seconds: list[float], ranks: int) -> dict:
    return {"step_durations": step_seconds, "peak_memory_mb": [100.0 + r for r in range(ranks)],
            "memory_kind": "cpu_max_rss", "strategy_details": {}}


def entries() -> list[StrategyRuns]:
    single = StrategyRuns("fashion_mnist", "single", plan_for("single", 2),
                          runs=[run([0.2, 0.2, 0.3], 1), run([0.2, 0.4, 0.2], 1)])
    ddp = StrategyRuns("fashion_mnist", "ddp", plan_for("ddp", 2),
                       runs=[run([0.1, 0.1, 0.1], 2), run([0.2, 0.1, 0.2], 2)])
    dp = StrategyRuns("fashion_mnist", "dp", None, skipped_reason="needs CUDA; use ddp")
    return [single, ddp, dp]


def test_medians_spread_speedup_and_efficiency():
    results = summarize_benchmark(entries())["fashion_mnist"]
    single, ddp = results["single"], results["ddp"]
    assert single["samples_per_s"] == 64 / 0.2  # median of all six steps
    assert (single["samples_per_s_min"], single["samples_per_s_max"]) == (64 / 0.2, 64 / 0.2)
    assert ddp["samples_per_s"] == 64 / 0.1
    assert (ddp["samples_per_s_min"], ddp["samples_per_s_max"]) == (64 / 0.2, 64 / 0.1)
    assert ddp["speedup"] == 2.0 and ddp["scaling_efficiency"] == 1.0
    assert ddp["devices"] == 2 and ddp["devices_virtual"] is True and single["devices_virtual"] is False
    assert ddp["peak_memory_mb"] == {"rank0": 100.0, "rank1": 101.0}
    assert ddp["environment"]["processes"] == 2


def test_skipped_strategy_has_a_reason_and_no_number(tmp_path):
    results = summarize_benchmark(entries())
    assert results["fashion_mnist"]["dp"] == {"status": "skipped", "reason": "needs CUDA; use ddp"}
    rows = table(results)
    assert list(rows["strategy"]) == ["single", "ddp"]
    assert skipped(results) == [("fashion_mnist", "dp", "needs CUDA; use ddp")]
    draw(rows, skipped(results), tmp_path / "figure.png")
    assert (tmp_path / "figure.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_rounds_rotate_the_order():
    three = entries()
    orders = [[entry.strategy for entry in interleaved(three, r)] for r in range(3)]
    assert orders == [["single", "ddp", "dp"], ["ddp", "dp", "single"], ["dp", "single", "ddp"]]
