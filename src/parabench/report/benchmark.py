"""Benchmark results: per cell the median rate with its interval, speedup and efficiency against the ceiling, each
with its 95% interval and a verdict against the run's noise floor (the A/A control); the checks a correct measurement
passes; and which strategy is fastest, named only beyond the noise."""

from typing import Any

import pandas as pd

from parabench.engine.cells import CEILING, CONTROL, CellRuns, MeasuredCells, timed_scale
from parabench.engine.timing import summarize
from parabench.io import write_atomic, write_json
from parabench.paths import benchmark_figure_file, benchmark_table_file, results_file
from parabench.records import (
    BenchmarkResults,
    Cell,
    CellFigures,
    CellsSummary,
    NoiseFloor,
    Ranking,
    SkippedCell,
    ran,
)
from parabench.report.benchmark_figure import draw
from parabench.report.time_split import PART_MEANINGS, time_split, typical_parts
from parabench.runtime.environment import describe, machine_line
from parabench.runtime.load import CONTENDED_SHARE
from parabench.runtime.step_signs import disturbances, kept_steps
from parabench.stats import NO_DIFFERENCE, median_interval, noise_floor, rate_ratio, ratio_verdict
from parabench.strategies.registry import BASELINE

NOT_STRATEGIES = (CEILING, CONTROL)  # cells that bound or check the others: never an answer
NOT_COMPARED = {
    "speedup": None,
    "speedup_ci95": None,
    "speedup_verdict": None,
    "scaling_efficiency": None,
    "efficiency_vs_ceiling": None,
    "efficiency_vs_ceiling_ci95": None,
    "efficiency_vs_ceiling_verdict": None,
}  # a cell's comparisons before summarize_cells makes them (with_comparisons)


SET_UP = {  # what a cell's setup measured, which its figures carry as measured
    "peak_memory_mb",
    "memory_kind",
    "saved_for_backward_mb",
    "input_bytes_per_unit",
    "output_bytes_per_unit",
    "parameters",
    "gradient_bytes",
    "buffer_bytes",
    "strategy_details",
}


def cell_result(entry: CellRuns, compute_beside: float | None) -> Cell:
    """One cell's figures: a median over every kept step of every turn (the disturbed ones left out, with a count),
    its interval, and its time split (report.time_split; a data-parallel strategy's compute is `compute_beside`, the
    ceiling copies' forward and backward on as many devices, where one ran), compared with no other cell yet."""
    if entry.plan is None or entry.run is None:
        return SkippedCell(status="skipped", reason=entry.skipped_reason or "no reason recorded")
    plan, run = entry.plan, entry.run
    by_turn = kept_steps(run.turns)
    steps = [duration for turn in by_turn for duration in turn]
    median, low, high = median_interval(by_turn)
    disturbed = disturbances(run.turns)
    data_parallel = plan.strategy.data_parallel and plan.copies == 1
    split = time_split(
        run,
        plan.strategy,
        communicates=plan.devices > 1 and plan.copies == 1,
        data_parallel=data_parallel,
        compute_beside=compute_beside,
    )
    return CellFigures(
        status="ran",
        unit=run.unit,
        rate=plan.global_batch / median,
        rate_ci95=[plan.global_batch / high, plan.global_batch / low],
        median_precision=(high - low) / 2 / median,
        step_durations_by_turn=by_turn,
        step_time_s=summarize(steps),
        turns=len(run.turns),
        disturbed_steps=disturbed,
        contended=sum(disturbed.values()) > CONTENDED_SHARE * (len(steps) + sum(disturbed.values())),
        global_batch=plan.global_batch,
        processes=plan.processes,
        devices=plan.devices,
        devices_virtual=plan.machine.accelerator == "cpu" and plan.devices > 1,
        data_parallel=data_parallel,
        **run.model_dump(include=SET_UP),
        environment={
            **describe(plan.machine, plan.processes, plan.threads, plan.distributed),
            f"transform_{run.unit}s_per_s_per_process": run.transform_units_per_s,
            f"train_{run.unit}s_per_s_per_process": plan.global_batch / median / plan.processes,
        },
        **split,
        **NOT_COMPARED,
    )


def paired_rate(figures: CellFigures, reference: CellFigures | None) -> float:
    """A cell's rate as its paired speedup puts it: single's median rate times the speedup, so that a rate and a
    speedup shown side by side are one estimate (the cell's own median, `rate`, is another: results/ keep it). The
    cell's own median rate where no speedup was measured (single itself, or no single)."""
    if reference is None or figures.speedup is None or figures is reference:
        return figures.rate
    return reference.rate * figures.speedup


def largest_rank_memory(figures: CellFigures) -> tuple[float, float | None]:
    """A summarised cell's largest rank: its peak memory (MB) and the activations it kept for backward (MiB, None where
    they were not counted), what a memory knob is judged by."""
    kept = figures.saved_for_backward_mb
    return max(figures.peak_memory_mb.values()), max(kept.values()) if kept else None


def summarize_cells(entries: list[CellRuns], smallest_difference: float = 0.0) -> CellsSummary:
    """The cells' figures (label -> figures), the noise floor, the checks and the ranking.

    Each cell that ran gets its speedup over `single` (its rate over single's) with a 95% bootstrap interval and a
    verdict: `faster` or `slower` only where the interval excludes 1 and the speedup is farther from 1 than the noise
    floor: how far the A/A control's ratio is from 1 (`single_control`: single timed again as a cell of its own),
    or `smallest_difference` where that is larger (params.yaml: what varies between runs, which one run's control
    cannot see).
    The ceiling is `devices` independent copies of `single`, each on its share of the batch, side by side with no
    communication: the most a data-parallel strategy, whose replicas do exactly that work plus the communication, can
    reach on this machine's (possibly shared) devices. A data-parallel strategy's efficiency_vs_ceiling = its rate
    over the ceiling's (at the same global batch): what the strategy itself loses, the shared cores aside. A cut
    strategy (model_parallel, pipeline) changes the work itself (micro-batches, one process's threads over smaller
    kernels), so the ceiling does not bound it.
    """
    ceilings = [entry for entry in entries if entry.cell.label == CEILING and entry.plan and entry.run]
    ceiling_devices = ceilings[0].plan.devices if ceilings and ceilings[0].plan else None
    ceiling_compute = typical_parts(ceilings[0].run)["forward_backward"] if ceilings and ceilings[0].run else None
    cells = {
        entry.cell.label: cell_result(
            entry, ceiling_compute if entry.plan is not None and entry.plan.devices == ceiling_devices else None
        )
        for entry in entries
    }
    reference, ceiling, control = (ran(cells, label) for label in (BASELINE, CEILING, CONTROL))
    noise = noise_of(reference, control, smallest_difference)
    compared: dict[str, Cell] = {
        label: with_comparisons(figures, reference, ceiling, noise.floor)
        if isinstance(figures, CellFigures)
        else figures
        for label, figures in cells.items()
    }
    flags = measurement_flags(compared, noise.floor)
    return CellsSummary(
        scale=timed_scale(entries),
        cells=compared,
        noise=noise,
        flags=flags,
        ranking=ranking(compared, flags, noise.floor),
    )


def with_comparisons(
    figures: CellFigures, reference: CellFigures | None, ceiling: CellFigures | None, floor: float | None
) -> CellFigures:
    """The cell with its speedup over `reference` and, for a data-parallel cell on as many devices as `ceiling`, its
    efficiency against it, each with its interval and verdict."""
    speedup, speedup_ci95, speedup_verdict = against(figures, reference, floor)
    comparable = figures.data_parallel and ceiling is not None and figures.devices == ceiling.devices
    efficiency, efficiency_ci95, efficiency_verdict = against(figures, ceiling if comparable else None, floor)
    return figures.model_copy(
        update={
            "speedup": speedup,
            "speedup_ci95": speedup_ci95,
            "speedup_verdict": speedup_verdict,
            "scaling_efficiency": speedup / figures.devices if speedup else None,
            "efficiency_vs_ceiling": efficiency,
            "efficiency_vs_ceiling_ci95": efficiency_ci95,
            "efficiency_vs_ceiling_verdict": efficiency_verdict,
        }
    )


def against(
    figures: CellFigures, base: CellFigures | None, floor: float | None
) -> tuple[float | None, list[float] | None, str | None]:
    """The cell's rate over `base`'s, its interval and its verdict against the noise floor (all None where `base`
    did not run)."""
    if base is None:
        return None, None, None
    point, low, high = rate_ratio(figures, base)
    return point, [low, high], ratio_verdict((point, low, high), floor)


def noise_of(reference: CellFigures | None, control: CellFigures | None, smallest_difference: float) -> NoiseFloor:
    """The A/A control: single's rate over its second timing's, its interval, and the noise floor: the control's, or
    `smallest_difference` where that is larger; or why the control did not run (then the floor is
    `smallest_difference` alone, and with none the verdicts rest on the intervals)."""
    if reference is None or control is None:
        return NoiseFloor(
            floor=smallest_difference or None,
            control=CONTROL,
            smallest_difference=smallest_difference,
            why_none="the A/A control did not run (benchmark.strategies must list single)",
        )
    point, low, high = rate_ratio(control, reference)
    measured = noise_floor(point)
    return NoiseFloor(
        floor=max(measured, smallest_difference),
        control=CONTROL,
        aa_ratio=point,
        aa_ci95=[low, high],
        aa_floor=measured,
        smallest_difference=smallest_difference,
    )


def measurement_flags(cells: dict[str, Cell], floor: float | None) -> dict[str, str]:
    """label -> why its figure is not an answer, for each cell that breaks an invariant of a correct measurement:
    a data-parallel cell above its ceiling (the ceiling did not bound it, so one of them measured something else),
    a one-process cut that is not single yet differs from single beyond the noise (the same work done another way:
    its cause is not measured here), or a one-rank data-parallel cell faster than single beyond the noise (single's
    work plus its wrapper's cannot take less). A one-rank data-parallel cell slower than single is an answer: what
    the wrapper costs (on one GPU, ddp's hooks and a one-rank all-reduce, fsdp's per-block gathers)."""
    flags = {}
    beyond = f"beyond the noise floor{f' of {floor:.1%}' if floor is not None else ''}"
    for label, figures in cells.items():
        if not isinstance(figures, CellFigures) or label in NOT_STRATEGIES:
            continue
        if figures.efficiency_vs_ceiling_verdict == "faster" and figures.efficiency_vs_ceiling_ci95:
            low, high = figures.efficiency_vs_ceiling_ci95
            flags[label] = (
                f"above its ceiling: {figures.efficiency_vs_ceiling:.2f}x the ceiling's rate "
                f"({low:.2f}-{high:.2f}), beyond the noise floor; independent copies cannot be slower than "
                "replicas doing the same work plus communication, so one of the two cells measured "
                "something else"
            )
        elif figures.processes != 1 or label == BASELINE or not figures.speedup_ci95:
            continue
        elif figures.data_parallel and figures.speedup_verdict == "faster":
            low, high = figures.speedup_ci95
            flags[label] = (
                f"one rank doing single's work through a data-parallel wrapper, yet {figures.speedup:.2f}x single "
                f"({low:.2f}-{high:.2f}, {beyond}): it cannot take less than single, so one of the two cells "
                "measured something else; not counted as an answer"
            )
        elif not figures.data_parallel and figures.speedup_verdict not in (None, NO_DIFFERENCE):
            low, high = figures.speedup_ci95
            flags[label] = (
                f"one process doing single's work, yet {figures.speedup:.2f}x single ({low:.2f}-{high:.2f}, "
                f"{beyond}): the model cut into stages runs other kernels (smaller batches or micro-batches), not "
                "other parallelism; not counted as an answer"
            )
    return flags


def ranking(cells: dict[str, Cell], flags: dict[str, str], floor: float | None) -> Ranking:
    """The fastest strategy, named only where it beats the next one beyond the noise; else the strategies tied with
    it. Ranked by what the verdicts use, the speedup over single paired by turn (where single ran; else the rate): the
    pooled median and the paired figure are two estimates, and the verdicts use the paired one. Cells
    that bound or check the others, and flagged ones, take no part."""
    candidates = {
        label: figures
        for label, figures in cells.items()
        if isinstance(figures, CellFigures) and label not in NOT_STRATEGIES and label not in flags
    }
    paired = all(figures.speedup is not None for figures in candidates.values())

    def measured(label: str) -> float:
        figures = candidates[label]
        return figures.speedup if paired and figures.speedup is not None else figures.rate

    ranked = sorted(candidates, key=measured, reverse=True)
    if not ranked:
        return Ranking(fastest=None, tied=[], margin=None, margin_ci95=None)
    best = ranked[0]
    tied = [best]
    for label in ranked[1:]:
        if ratio_verdict(rate_ratio(candidates[best], candidates[label]), floor) == "faster":
            break
        tied.append(label)
    margin = rate_ratio(candidates[best], candidates[ranked[1]]) if len(ranked) > 1 else None
    return Ranking(
        fastest=best if len(tied) == 1 else None,
        tied=tied if len(tied) > 1 else [],
        best_measured=best,
        runner_up=ranked[1] if len(ranked) > 1 else None,
        margin=margin[0] if margin else None,
        margin_ci95=list(margin[1:]) if margin else None,
    )


def table(results: dict[str, Cell]) -> pd.DataFrame:
    """One row per cell that ran, for `dvc plots` and the figure: its rate, spread, speedups and time split (a part
    that does not apply to the cell left empty)."""
    rows = [
        {
            "cell": label,
            "unit": figures.unit,
            "rate": figures.rate,
            "rate_low": figures.rate_ci95[0],
            "rate_high": figures.rate_ci95[1],
            "speedup": figures.speedup,
            "scaling_efficiency": figures.scaling_efficiency,
            "efficiency_vs_ceiling": figures.efficiency_vs_ceiling,
            "devices": figures.devices,
            "devices_virtual": figures.devices_virtual,
            "step_median_s": figures.step_time_s.median,
            **{f"{part}_s": figures.time_split_s.get(part) for part in PART_MEANINGS},
        }
        for label, figures in results.items()
        if isinstance(figures, CellFigures)
    ]
    return pd.DataFrame(rows)


def skipped(results: dict[str, Cell]) -> list[tuple[str, str]]:
    """(cell, reason) of every cell that could not run here."""
    return [(label, figures.reason) for label, figures in results.items() if isinstance(figures, SkippedCell)]


def write_benchmark(
    workload: str, measured: MeasuredCells, choices: dict[str, Any], smallest_difference: float
) -> BenchmarkResults:
    """Every output of a workload's benchmark, from what its stage measured: the table, the figure and the full
    results (cells, noise floor, flags, ranking, where the stage's time went, and the choices the workload shows
    beside its figures), verdicts named beyond `smallest_difference` at least. `dvc metrics show` reads its answer from
    the speedup metrics (report/speedup.compare)."""
    summary = summarize_cells(measured.cells, smallest_difference)
    rows = table(summary.cells)
    write_atomic(benchmark_table_file(workload), lambda tmp: rows.to_csv(tmp, index=False, float_format="%.6g"))
    draw(workload, rows, skipped(summary.cells), machine_line(measured.environment), benchmark_figure_file(workload))
    results = BenchmarkResults(**dict(summary), stage=measured.stage.shares(), choices=choices)
    write_json(results_file("benchmark", workload), results.model_dump(mode="json"))
    return results
