"""A sweep's results: one table per curve (value, median step time and quartiles, rate) and the best value of each,
compared with single, model_parallel and the curve's largest value (for a split size: the whole batch, no
pipelining)."""

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from parabench.config import Sweep
from parabench.engine.cells import StageTime, SweepPoint
from parabench.io import write_atomic, write_json
from parabench.paths import results_file, sweep_figure_file, sweep_metrics_dir, sweep_table_dir
from parabench.prediction.checks import checked_sweep_cells
from parabench.prediction.collectives import Links
from parabench.records import (
    Cell,
    CellFigures,
    CurveFigures,
    SkippedCell,
    SkippedCurve,
    StepTimes,
    SweepCell,
    SweepResults,
)
from parabench.report.benchmark import largest_rank_memory
from parabench.report.sweep_figure import draw
from parabench.runtime.environment import machine_line
from parabench.strategies.registry import REFERENCE_LINES, STRATEGIES

TABLE_COLUMNS = ["value", "median_s", "p25_s", "p75_s"]


def curve_tables(cells: list[SweepCell]) -> dict[str, pd.DataFrame]:
    """curve -> one row per value that ran: value, median_s, p25_s, p75_s (per step), units per second, and its
    largest rank's peak memory and activations kept for backward (what a knob such as checkpointing saves); a curve
    none of whose values could run here has a table with no rows."""
    rows: dict[str, list[dict[str, Any]]] = {cell.curve: [] for cell in cells if cell.value is not None}
    for cell in cells:
        figures = cell.figures
        if cell.value is None or not isinstance(figures, CellFigures):
            continue
        peak_memory, kept = largest_rank_memory(figures)
        rows[cell.curve].append(
            {
                "value": cell.value,
                "median_s": figures.step_time_s.median,
                "p25_s": figures.step_time_s.p25,
                "p75_s": figures.step_time_s.p75,
                f"{figures.unit}s_per_s": figures.rate,
                "peak_memory_mb": peak_memory,
                "saved_for_backward_mb": kept,
            }
        )
    return {
        curve: pd.DataFrame(curve_rows, columns=None if curve_rows else TABLE_COLUMNS)
        for curve, curve_rows in rows.items()
    }


def reference_lines(cells: list[SweepCell]) -> dict[str, StepTimes | SkippedCell]:
    """single and model_parallel: their steps where they ran, why not where they were skipped."""
    return {
        cell.curve: cell.figures.step_time_s if isinstance(cell.figures, CellFigures) else cell.figures
        for cell in cells
        if cell.value is None
    }


def curve_summary(
    table: pd.DataFrame, lines: dict[str, StepTimes | SkippedCell], engine_note: str | None
) -> CurveFigures | SkippedCurve:
    """The curve's fastest value, and how much faster it is (> 1: faster) than single (`speedup`, as in the
    benchmark), model_parallel, and the curve's own largest value (for a split size: the whole batch); or, when no
    value could run on this hardware, status `skipped`."""
    if table.empty:
        return SkippedCurve(status="skipped")
    medians, values = table["median_s"].to_numpy(dtype=float), table["value"].to_numpy()
    best = int(medians.argmin())
    largest = int(values.argmax()) if pd.api.types.is_numeric_dtype(table["value"]) else len(values) - 1
    best_s = float(medians[best])
    single, model_parallel = (lines.get(reference) for reference in REFERENCE_LINES)
    return CurveFigures(
        status="ran",
        best_value=plain(values[best]),
        best_median_s=best_s,
        speedup=single.median / best_s if isinstance(single, StepTimes) else None,
        speedup_vs_model_parallel=model_parallel.median / best_s if isinstance(model_parallel, StepTimes) else None,
        largest_value=plain(values[largest]),
        speedup_vs_largest_value=float(medians[largest]) / best_s,
        note=engine_note,
    )


METRIC_KEYS = ("status", "best_value", "speedup", "speedup_vs_largest_value")


def compact(summary: CurveFigures | SkippedCurve) -> dict[str, Any]:
    """The few numbers `dvc metrics show` prints for a curve (results/sweep holds the rest)."""
    return summary.model_dump(include=set(METRIC_KEYS))


def write_csv(table: pd.DataFrame, path: Path) -> None:
    """A curve's table as CSV (six significant digits), for `dvc plots`."""
    table.to_csv(path, index=False, float_format="%.6g")


def plain(value: Any) -> Any:
    """A table cell as a plain Python value (numpy scalars do not go into JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def curve_notes(cells: list[SweepCell], sweep: Sweep) -> dict[str, str | None]:
    """Per curve, why its stages cannot overlap here, where they cannot (what its strategy recorded says:
    Details.why_stages_wait)."""
    notes = {}
    for cell in cells:
        if cell.value is not None and isinstance(cell.figures, CellFigures):
            recorded = STRATEGIES[sweep.strategy_of(cell.curve)].details_of(cell.figures.strategy_details)
            notes[cell.curve] = recorded.why_stages_wait()
    return notes


def skipped_cells(cells: list[SweepCell], param: str) -> list[str]:
    """Each skipped cell of the sweep of `param`, with the first line of why."""
    return [
        f"{cell.curve} {param}={cell.value} skipped: {cell.figures.reason.splitlines()[0]}"
        for cell in cells
        if isinstance(cell.figures, SkippedCell)
    ]


def write_sweep(
    name: str,
    sweep: Sweep,
    scale: str,
    points: list[SweepPoint],
    results: list[Cell],
    stage: StageTime,
    environment: dict[str, Any],
    links: Links | None,
) -> None:
    """Every output of a sweep, from its cells' figures (report.benchmark.summarize_cells, one per point): a CSV and
    a metrics JSON per curve, the figure, and the full results (with where the stage's time went, on `environment`,
    the machine that timed it, and the scaling prediction checked at its distributed pipeline cells, their stages'
    activations crossing `links`, the probe's)."""
    cells = [
        SweepCell(curve=point.curve, value=point.value, figures=figures)
        for point, figures in zip(points, results, strict=True)
    ]
    tables, lines = curve_tables(cells), reference_lines(cells)
    notes, skipped = curve_notes(cells, sweep), skipped_cells(cells, sweep.param)
    summaries = {curve: curve_summary(table, lines, notes.get(curve)) for curve, table in tables.items()}
    for curve, table in tables.items():
        write_atomic(sweep_table_dir(name) / f"{curve}.csv", partial(write_csv, table))
    title = f"{sweep.workload}: {sweep.strategy} over {sweep.param} ({name}, {scale} scale)"
    figure_notes = [*sorted({note for note in notes.values() if note}), *skipped]
    draw(
        f"{title}\nmeasured on {machine_line(environment)}",
        sweep.param,
        tables,
        lines,
        figure_notes,
        sweep_figure_file(name),
    )
    results_record = SweepResults(
        sweep=sweep.model_dump(),
        scale=scale,
        curves=summaries,
        reference_lines=lines,
        skipped=skipped,
        stage=stage.shares(),
        cells=cells,
        prediction_checks=checked_sweep_cells(cells, links, sweep.strategy_of),
    )
    write_json(results_file("sweep", name), results_record.model_dump(mode="json"))
    for curve, summary in summaries.items():
        write_json(sweep_metrics_dir(name) / f"{curve}.json", compact(summary))
