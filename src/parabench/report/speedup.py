"""The run against its reference: its speedup with its interval, scaling efficiency, the quality of both and its
paired difference.

Two figures measure the same step ratio. The benchmark's (`speedup_benchmark`) timed both strategies in interleaved
turns, so that noise hit them alike, beside an A/A control; the training runs' (`speedup_training_runs`: the
reference's median step over the run's, their step counts counted) ran minutes or experiments apart, where other
work or a slower spell of a shared machine can distort either. The headline `speedup` is the benchmark's whenever the
benchmark timed the run's strategy (`speedup_from` says which), each with its 95% bootstrap interval;
`speedups_agree` says whether the two agree within their noise (stats.estimates_agree). `speedup_end_to_end` is the
ratio of the two jobs' wall times from launch to the last checkpoint: what a user waits for, start-up (torchrun,
process group) and the evaluation after each epoch included.
"""

from typing import Any

from parabench.data.provenance import Provenance
from parabench.data.registry import origin_tag
from parabench.records import CellsSummary, Comparison, Evaluation, Ranking, RunRecord, Speedups, ran
from parabench.stats import estimates_agree, in_words, rate_ratio, ratio_interval
from parabench.strategies.registry import BASELINE
from parabench.workloads import WORKLOADS

DRAWN = "synthetic, seeded"
SHOWN_DIGITS = 4  # significant digits of the metrics' figures: their intervals are wider than the fourth
INTERLEAVED_NOTE = (
    "speedup: the benchmark's interleaved figure where the benchmark timed the run's strategy (speedup_from: "
    "benchmark), else the training runs' (speedup_from: training_runs), with its 95% interval; speedup_benchmark: "
    "the reference's rate over the run's in the benchmark stage's interleaved turns, beside an A/A control; "
    "speedup_training_runs: the reference's median training step over the run's (their step counts counted), timed "
    "minutes apart, so a slow spell of the machine can distort it; speedups_agree: whether they agree within their "
    "intervals combined; speedup_end_to_end: the reference job's wall time over the run's, start-up and evaluation "
    "included; contended: other programs took more than 10% of the CPU while a run was timed."
)


def benchmark_speedup(
    benchmark: CellsSummary | None, strategy: str, reference: str, scale: str
) -> tuple[float, float, float] | None:
    """The benchmark's rate of `strategy` over that of `reference`, with its 95% interval, when both ran there, at
    the run's `scale` (on a GPU the benchmark times the seeds' sizes: benchmark.scale_on; a ratio at another scale is
    another answer)."""
    if benchmark is None or benchmark.scale != scale:
        return None
    run, ref = ran(benchmark.cells, strategy), ran(benchmark.cells, reference)
    return rate_ratio(run, ref) if run is not None and ref is not None else None


def training_runs_speedup(run: RunRecord, reference: RunRecord) -> tuple[float, float, float]:
    """The reference's training time over the run's (median step x steps), with the 95% interval of its median
    steps' ratio."""
    point = reference.train_time_s / run.train_time_s
    steps, low, high = ratio_interval([reference.step_durations], [run.step_durations])
    return point, point * low / steps, point * high / steps


def end_to_end_speedup(run: RunRecord, reference: RunRecord) -> float | None:
    """The reference job's wall time over the run's; None when either resumed from a checkpoint (it did not run
    end to end) or was not launched by a stage."""
    if (
        run.wall_time_s is None
        or reference.wall_time_s is None
        or run.resumed_after_epoch
        or reference.resumed_after_epoch
    ):
        return None
    return reference.wall_time_s / run.wall_time_s


def data_tag(run: RunRecord) -> str:
    """What a run's data is in a few words, for its metrics column (results/ keep its data_origin sentence): the full
    set, a SAMPLE of it, a local folder, another dataset's pixels, or drawn from the seed (no provenance record)."""
    record = run.data_provenance
    if record is None:
        return DRAWN
    tag = origin_tag(Provenance.model_validate(record))
    return tag if WORKLOADS[run.workload].dataset == record["dataset"] else f"pixels of {tag}"


def speedups(run: RunRecord, reference: RunRecord, benchmark: CellsSummary | None) -> Speedups:
    """The headline speedup with its interval and where it comes from, both figures it is chosen from with their
    intervals, and whether they agree (module docstring)."""
    training_runs = training_runs_speedup(run, reference)
    interleaved = benchmark_speedup(benchmark, run.strategy, reference.strategy, run.scale)
    headline = interleaved or training_runs
    return Speedups(
        speedup=headline[0],
        speedup_ci95=list(headline[1:]),
        speedup_from="benchmark" if interleaved else "training_runs",
        speedup_benchmark=interleaved[0] if interleaved else None,
        speedup_benchmark_ci95=list(interleaved[1:]) if interleaved else None,
        speedup_training_runs=training_runs[0],
        speedup_training_runs_ci95=list(training_runs[1:]),
        speedups_agree=estimates_agree(interleaved, training_runs) if interleaved else None,
    )


def compare(
    run: RunRecord,
    reference: RunRecord,
    evaluation: Evaluation,
    benchmark: CellsSummary | None,
    primary_metric: str | None,
) -> dict[str, Any]:
    """The workload's answer in about a dozen values, a column each in `dvc exp show`: the run's strategy, its speedup
    over its reference (module docstring; results/ name the reference, params.yaml's reference.strategy) and its
    verdict against the benchmark's noise floor, the benchmark's fastest strategy, the run's primary metric and its
    paired difference from the reference's on the same test items (95% interval half-widths), whether other programs
    contended, the choices shown beside the metrics, and the data. Every other figure (both speedups' intervals, end
    to end, times, rates, each benchmark cell) is in results/, at full precision; here each figure has SHOWN_DIGITS
    significant digits."""
    figures = speedups(run, reference, benchmark)
    quality = {}
    if primary_metric is not None:
        paired = evaluation.paired
        assert paired is not None, "a workload with a primary metric scores its test items"
        quality = {
            f"{primary_metric}_delta": paired.delta,
            f"{primary_metric}_delta_ci95": (paired.ci95_high - paired.ci95_low) / 2,
        }
    cell = ran(benchmark.cells, run.strategy) if benchmark else None
    answer = {
        "strategy": run.strategy,
        **evaluation.train,
        **quality,
        "speedup": figures.speedup,
        "speedup_verdict": cell.speedup_verdict if cell and figures.speedup_from == "benchmark" else None,
        "noise_floor": benchmark.noise.floor if benchmark else None,
        "fastest": fastest_in_words(benchmark.ranking) if benchmark else None,
        "contended": run.contended or reference.contended,
        **run.labels,
        "data_origin": data_tag(run),
    }
    return {
        key: float(f"{value:.{SHOWN_DIGITS}g}") if isinstance(value, float) else value for key, value in answer.items()
    }


def fastest_in_words(ranking: Ranking) -> str | None:
    """The benchmark's fastest strategy beyond its noise floor, or how many it could not tell apart (results/ and the
    summary name them)."""
    if ranking.fastest:
        return ranking.fastest
    return f"none beyond noise ({len(ranking.tied)} tied)" if ranking.tied else None


def details(run: RunRecord, reference: RunRecord, evaluation: Evaluation, benchmark: CellsSummary | None) -> Comparison:
    """What the compact comparison leaves out: how to read it, both speedups with their intervals and whether they
    agree, scaling efficiency (the speedup over the run's devices), end to end, both runs' rates, times, scores, load
    and environments."""
    figures = speedups(run, reference, benchmark)
    return Comparison(
        note=INTERLEAVED_NOTE,
        strategy=run.strategy,
        reference=reference.strategy,
        accumulate=run.accumulate,
        knobs=run.knobs(),
        speedups=figures,
        quality=in_words(evaluation.paired.model_dump(), run.strategy, reference.strategy)
        if evaluation.paired is not None
        else None,
        data_origin=run.data_origin,
        scaling_efficiency=figures.speedup / run.devices,
        speedup_end_to_end=end_to_end_speedup(run, reference),
        rate={"unit": run.unit, "run": run.units_per_s, "reference": reference.units_per_s},
        train_time_s={"run": run.train_time_s, "reference": reference.train_time_s},
        wall_time_s={"run": run.wall_time_s, "reference": reference.wall_time_s},
        devices=run.devices,
        evaluation=evaluation,
        benchmark_reference=BASELINE,
        load={
            role: {"other_cpu_share": record.other_cpu_share, "load_average_1m": record.load_average_1m}
            for role, record in (("run", run), ("reference", reference))
        },
        environment={"run": run.environment, "reference": reference.environment},
    )
