"""A pipeline's outputs for two workloads, as the stages write them, with set figures: what the report page reads."""

import json
from pathlib import Path

import pandas as pd

from parabench.config import PredictOptions
from parabench.engine.cells import StageTime
from parabench.paths import (
    ENVIRONMENT_FILE,
    PROBE_FILE,
    PROBE_NETWORK_FILE,
    benchmark_figure_file,
    results_file,
    sweep_figure_file,
    train_curve_file,
)
from parabench.prediction.predict import predict
from parabench.records import (
    BenchmarkResults,
    CellFigures,
    CollectiveFit,
    CurveFigures,
    Evaluation,
    PairedDifference,
    Probed,
    ProbePoint,
    RunRecord,
    SweepCell,
    SweepResults,
)
from parabench.report.benchmark import skipped, summarize_cells, table
from parabench.report.benchmark_figure import draw
from parabench.report.speedup import details
from tests import setups
from tests.test_benchmark_report import cell_run, entries, turn

MACHINE = {
    "cpu_model": "AMD EPYC 9B14",
    "cpu_capability": "AVX512",
    "cores": 2,
    "gpus": [],
    "torch": "2.14.1+cu130",
    "cuda": "13.0",
}
WORKLOADS = ("fashion_mnist", "resnet50")
SWEEP = "split_size"


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


SCORES = {"test_acc": 0.85, "test_acc_ci95": 0.007}
PAIRED = PairedDifference(delta=0.0, ci95_low=-0.004, ci95_high=0.004, items=10_000, mcnemar_p=1.0)
EVALUATIONS = {  # fashion_mnist scored on its test items, resnet50's synthetic data not
    "fashion_mnist": Evaluation(train=SCORES, reference=SCORES, paired=PAIRED),
    "resnet50": Evaluation(train={}, reference={}),
}


def run_record(strategy: str) -> RunRecord:
    """A run of four 0.1 s steps."""
    return setups.run_record(strategy, [0.1] * 4)


def benchmark_results() -> BenchmarkResults:
    """The benchmark of tests.test_benchmark_report's cells (single, ddp, the ceiling, model_parallel; dp skipped), as
    the speedup stage writes it, with ddp twice single's speed in both turns (there, 2x and then 1x), one step of its
    second turn disturbed: the page has a fastest strategy to name."""
    cells = entries()
    ddp = cells[1]
    assert ddp.run is not None
    ddp.run = cell_run([ddp.run.turns[0], turn([0.1, 0.1], 2), turn([0.3], 2, other=0.5)], allreduce_s=0.02)
    stage = StageTime(wall_s=100.0, start_up_s=10.0, setup_s=20.0, timed_steps_s=60.0, jobs_started=2, turns=3)
    stage_shares = stage.shares()
    return BenchmarkResults(**dict(summarize_cells(cells)), stage=stage_shares, choices={"pretrained": "none"})


def write_pipeline_outputs(root: Path) -> None:
    """Under `root`: the environment, and for each of WORKLOADS its benchmark (results and figure), both runs'
    records and per-epoch curves and their comparison (fashion_mnist with quality, resnet50 time only), and one
    sweep of resnet50."""
    write_json(root / ENVIRONMENT_FILE, MACHINE)
    benchmark = benchmark_results()
    for workload in WORKLOADS:
        write_json(root / results_file("benchmark", workload), benchmark.model_dump(mode="json"))
        figure = root / benchmark_figure_file(workload)
        figure.parent.mkdir(parents=True, exist_ok=True)
        draw(workload, table(benchmark.cells), skipped(benchmark.cells), "AMD EPYC 9B14 (AVX512)", figure)
        runs = {role: run_record(strategy) for role, strategy in (("train", "ddp"), ("reference", "single"))}
        for role, record in runs.items():
            write_json(root / results_file(role, workload), record.model_dump(mode="json"))
            curve = root / train_curve_file(role, workload)
            curve.parent.mkdir(parents=True, exist_ok=True)
            pd.DataFrame(
                {"epoch": [1, 2], "train_loss": [0.9, 0.5], "train_acc": [0.6, 0.8], "test_acc": [0.7, 0.85]}
            ).to_csv(curve, index=False)
        comparison = details(runs["train"], runs["reference"], EVALUATIONS[workload], benchmark)
        write_json(root / results_file("speedup", workload), comparison.model_dump(mode="json"))
    point = ProbePoint(bytes=4096, seconds=1e-4, algbw_bytes_per_s=4.1e7, busbw_bytes_per_s=4.1e7, cpu_share=0.8)
    probe = Probed(
        across="devices",
        ranks=2,
        backend="gloo",
        device="cpu",
        threads_per_rank=1,
        repeats=5,
        collectives={
            "all_reduce": CollectiveFit(
                status="ran", latency_s=1e-4, bandwidth_bytes_per_s=1e9, cpu_share=1.0, points=[point]
            )
        },
        copy_bytes_per_s=5e9,
        shard_unit_s=0.004,
        replicate_unit_s=0.002,
        environment=MACHINE,
    )
    write_json(root / PROBE_FILE, probe.model_dump(mode="json"))
    network_fit = CollectiveFit(
        status="ran", latency_s=3e-4, bandwidth_bytes_per_s=1.2e8, cpu_share=1.0, points=[point]
    )
    network = probe.model_copy(update={"across": "nodes", "collectives": {"all_reduce": network_fit}})
    write_json(root / PROBE_NETWORK_FILE, network.model_dump(mode="json"))
    options = PredictOptions(
        devices=[4, 64], devices_per_node=8, interconnect="measured", network="measured", probe_max_bytes=4
    )
    prediction = predict(benchmark, options, "strong", probe, network)
    write_json(root / results_file("prediction", "fashion_mnist"), prediction.model_dump(mode="json"))
    cells = benchmark.cells
    cut = cells["model_parallel"]
    assert isinstance(cut, CellFigures)
    figures = cut.model_copy(  # set figures: 0.25 s a step, 312 MB at peak, 4.5 MiB kept for backward
        update={
            "step_time_s": cut.step_time_s.model_copy(update={"median": 0.25}),
            "peak_memory_mb": {"rank0": 312.0},
            "saved_for_backward_mb": {"rank0": 4.5},
        }
    )
    swept = [
        SweepCell(curve="inprocess", value=4, figures=figures),
        SweepCell(curve="single", value=None, figures=cells["single"]),
        SweepCell(curve="model_parallel", value=None, figures=cells["dp"]),
    ]
    sweep = SweepResults(
        sweep={"workload": "resnet50", "param": "pipeline.split_size.resnet50"},
        scale="quick",
        curves={
            "inprocess": CurveFigures(
                status="ran",
                best_value=4,
                best_median_s=figures.step_time_s.median,
                speedup=1.1,
                speedup_vs_model_parallel=None,
                largest_value=4,
                speedup_vs_largest_value=1.0,
            )
        },
        reference_lines={},
        skipped=[],
        stage=benchmark.stage,
        cells=swept,
        prediction_checks=[],
    )
    write_json(root / results_file("sweep", SWEEP), sweep.model_dump(mode="json"))
    (root / sweep_figure_file(SWEEP)).write_bytes((root / benchmark_figure_file("resnet50")).read_bytes())
