"""Benchmark and sweep cells: a workload under a strategy with overrides, timed over interleaved rounds.

The benchmark stage and the sweeps share this runner; every cell runs the same steps. A timing stage writes what it
measured as measured (write_cell_runs); the speedup and sweep_summary stages draw the figures from that file
(read_cell_runs), so an edit of how results are summarised re-times nothing. A cell that cannot run here
is planned as skipped, with its reason, before any heavy work. Round r runs the cells rotated by r, a cyclic Latin
square: over as many rounds as cells, every cell takes every position. After the first `rounds`, a cell whose
median step is not yet known within `median_within` gets another round, up to `max_rounds`. A cell whose run was timed
for less than `min_timed_s` (a GPU's steps of milliseconds) runs proportionally more warm-up and timed steps from then
on, as timeit's autorange does. A run during which other programs took more than a tenth of the CPU is timed again
once, in its place. The benchmark times `single` twice, as two cells (the A/A control): their ratio is the
run's own noise floor.
"""

import logging
import math
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from parabench.config import PARAMS_FILE, CellTiming, Sweep, sweep_params, validate_params, with_overrides
from parabench.engine.cell_jobs import CellJobs
from parabench.engine.plan import RunPlan, make_plan
from parabench.errors import ConfigError, StrategyUnavailable
from parabench.io import read_json, write_json
from parabench.records import CellRun, StageShares
from parabench.runtime.environment import machine_identity
from parabench.runtime.hardware import Machine, resolve
from parabench.runtime.load import CONTENDED_SHARE
from parabench.stats import median_interval

log = logging.getLogger("parabench.cells")
CEILING = "ceiling"
CONTROL = "single_control"  # the A/A control: single timed again, as a cell of its own
REFERENCE_LINES = ("single", "model_parallel")
MAX_LENGTHENING = 16  # a run holds its batches in memory: at most 16 times timing's warm-up and timed steps


@dataclass(frozen=True)
class Cell:
    """What to measure: a workload under a strategy with params overrides; `copies` independent copies at once."""

    workload: str
    strategy: str
    overrides: tuple[tuple[str, Any], ...] = ()
    copies: int = 1
    control: bool = False  # the A/A control: the same run as another cell, timed as a cell of its own

    @property
    def label(self) -> str:
        """The cell's name in results: the strategy, its overrides, `ceiling` for side-by-side copies, or
        `single_control` for the A/A control."""
        if self.copies > 1:
            return CEILING
        if self.control:
            return CONTROL
        return " ".join([self.strategy, *(f"{key}={value}" for key, value in self.overrides)])


@dataclass
class CellRuns:
    """A cell's plan and the runs measured for it, or why it was skipped."""

    cell: Cell
    plan: RunPlan | None
    skipped_reason: str | None = None
    runs: list[CellRun] = field(default_factory=list)


def this_node(machine: Machine) -> Machine:
    """The machine as one node: benchmark and sweep cells time this node's processes (the other nodes would have
    to join every cell of every round), whatever hardware.nodes says for train and reference."""
    return machine.model_copy(update={"nodes": 1})


def plan_cell(raw_params: dict[str, Any], cell: Cell) -> CellRuns:
    """Validate the params with the cell's overrides and plan it; a cell that cannot run is skipped, with why."""
    where = f"{PARAMS_FILE} with {dict(cell.overrides)}" if cell.overrides else str(PARAMS_FILE)
    params = validate_params(with_overrides(raw_params, dict(cell.overrides)), where)
    try:
        plan = make_plan(
            params,
            cell.workload,
            "benchmark",
            strategy_name=cell.strategy,
            machine=this_node(resolve(params.hardware)),
            copies=cell.copies,
        )
    except (StrategyUnavailable, ConfigError) as reason:
        log.warning("%s on %s skipped: %s", cell.label, cell.workload, reason)
        return CellRuns(cell, None, skipped_reason=str(reason))
    return CellRuns(cell, plan)


def interleaved(runnable: list[CellRuns], round_index: int) -> list[CellRuns]:
    """This round's order: the list rotated by the round number (a cyclic Latin square), so no cell always goes
    first and, over as many rounds as cells, every cell takes every position."""
    shift = round_index % len(runnable) if runnable else 0
    return runnable[shift:] + runnable[:shift]


def run_length(timing: CellTiming, previous: CellRun | None) -> tuple[int, int]:
    """Warm-up and timed steps of a cell's next run: timing's, or, when the cell's last run was timed for less than
    timing.min_timed_s, both multiplied by what brings the timed part to min_timed_s (at most MAX_LENGTHENING)."""
    if previous is None:
        return timing.warmup_steps, timing.timed_steps
    timed_s = statistics.median(previous.step_durations) * timing.timed_steps
    factor = min(MAX_LENGTHENING, max(1, math.ceil(timing.min_timed_s / timed_s)))
    return timing.warmup_steps * factor, timing.timed_steps * factor


def disturbed(run: CellRun) -> bool:
    """Whether other programs took more than CONTENDED_SHARE of the machine's CPU while the run was timed: such a run
    is timed again once, in its place, as hyperfine warns of and pyperf's `system tune` guards against."""
    return run.other_cpu_share is not None and run.other_cpu_share > CONTENDED_SHARE


def precise(entry: CellRuns, within: float) -> bool:
    """Whether a cell's median step is known within `within` (its 95% interval's half-width over the median)."""
    median, low, high = median_interval([run.step_durations for run in entry.runs])
    return (high - low) / 2 <= within * median


@dataclass
class StageTime:
    """Where a timing stage's seconds went: all of it, starting worker processes, and the timed steps themselves."""

    wall_s: float = 0.0
    start_up_s: float = 0.0
    timed_steps_s: float = 0.0
    jobs_started: int = 0
    runs_disturbed: int = 0  # runs timed again: other programs took the CPU meanwhile (disturbed)

    def shares(self) -> StageShares:
        """The seconds and the shares of the wall time, as results record them."""
        wall = self.wall_s or float("nan")
        return StageShares(
            wall_s=self.wall_s,
            start_up_s=self.start_up_s,
            timed_steps_s=self.timed_steps_s,
            start_up_share=self.start_up_s / wall,
            timed_steps_share=self.timed_steps_s / wall,
            jobs_started=self.jobs_started,
            runs_disturbed=self.runs_disturbed,
        )


def run_cells(planned: list[CellRuns], timing: CellTiming, what: str) -> StageTime:
    """Time every runnable cell once per round, in rotating order (warm or fresh workers, timing.workers); after
    timing.rounds, rounds go on for the cells whose median is not yet within timing.median_within, up to
    timing.max_rounds. Keeps each run's figures in its CellRuns; returns where the stage's time went."""
    began, stage = time.monotonic(), StageTime()
    runnable = [entry for entry in planned if entry.plan is not None]
    for plan in (entry.plan for entry in runnable if entry.plan is not None):
        plan.workload.prefetch(plan.settings)
    with (
        tempfile.TemporaryDirectory(prefix="parabench-cells-") as scratch,
        CellJobs(Path(scratch), timing.workers, what) as jobs,
        tqdm(total=timing.rounds * len(runnable), unit="cell", desc="cells", disable=None) as progress,
    ):
        for round_index in range(timing.max_rounds):
            due = [
                entry
                for entry in interleaved(runnable, round_index)
                if round_index < timing.rounds or not precise(entry, timing.median_within)
            ]
            if not due:
                break
            if round_index >= timing.rounds:
                progress.total = (progress.total or 0) + len(due)
            for entry in due:
                assert entry.plan is not None
                warmup, steps = run_length(timing, entry.runs[-1] if entry.runs else None)
                log.info(
                    "round %d: %s on %s (%d warm-up + %d timed steps)",
                    round_index + 1,
                    entry.cell.label,
                    entry.cell.workload,
                    warmup,
                    steps,
                )
                run = jobs.measure(entry.plan, warmup, steps, apart=entry.cell.control, count_kept=not entry.runs)
                if disturbed(run):
                    log.warning(
                        "round %d: %s on %s: other programs took %.0f%% of the CPU meanwhile; timed again",
                        round_index + 1,
                        entry.cell.label,
                        entry.cell.workload,
                        100 * (run.other_cpu_share or 0.0),
                    )
                    stage.timed_steps_s += sum(run.step_durations)
                    stage.runs_disturbed += 1
                    run = jobs.measure(entry.plan, warmup, steps, apart=entry.cell.control, count_kept=not entry.runs)
                entry.runs.append(run)
                stage.timed_steps_s += sum(run.step_durations)
                progress.update()
    stage.start_up_s, stage.jobs_started = jobs.start_up_s, jobs.started
    stage.wall_s = time.monotonic() - began
    log.info(
        "%s: %.0f s, %.0f%% starting workers (%d jobs), %.0f%% in timed steps",
        what,
        stage.wall_s,
        100 * stage.start_up_s / stage.wall_s,
        stage.jobs_started,
        100 * stage.timed_steps_s / stage.wall_s,
    )
    return stage


@dataclass
class MeasuredCells:
    """A timing stage's cells as it measured them, where its time went, and the machine it measured on."""

    cells: list[CellRuns]
    stage: StageTime
    environment: dict[str, Any]


def write_cell_runs(path: Path, planned: list[CellRuns], stage: StageTime) -> None:
    """Every cell's plan (or why it was skipped) and its runs, the stage's time and this machine's identity."""
    write_json(
        path,
        {
            "environment": machine_identity(),
            "stage": asdict(stage),
            "cells": [
                {
                    "cell": asdict(entry.cell),
                    "plan": entry.plan.model_dump(mode="json") if entry.plan else None,
                    "skipped_reason": entry.skipped_reason,
                    "runs": [run.model_dump(mode="json") for run in entry.runs],
                }
                for entry in planned
            ],
        },
    )


def read_cell_runs(path: Path) -> MeasuredCells:
    """What write_cell_runs wrote."""
    measured = read_json(path)
    cells = [
        CellRuns(
            Cell(**{**entry["cell"], "overrides": tuple(tuple(pair) for pair in entry["cell"]["overrides"])}),
            RunPlan.model_validate(entry["plan"]) if entry["plan"] else None,
            entry["skipped_reason"],
            [CellRun.model_validate(run) for run in entry["runs"]],
        )
        for entry in measured["cells"]
    ]
    return MeasuredCells(cells, StageTime(**measured["stage"]), measured["environment"])


def benchmark_cells(workload: str, strategies: Sequence[str], devices: int) -> list[Cell]:
    """Every listed strategy, `single` again in the middle of the order (the A/A control, as far from `single` as
    the rotation allows), plus `devices` copies of `single` side by side: what the shared machine allows."""
    cells = [Cell(workload, strategy) for strategy in strategies]
    if "single" in strategies:
        cells.insert(
            min(len(cells), strategies.index("single") + (len(cells) + 1) // 2), Cell(workload, "single", control=True)
        )
    if devices > 1:
        cells.append(Cell(workload, "single", copies=devices))
    return cells


def plan_benchmark(
    raw_params: dict[str, Any], workload: str, strategies: Sequence[str], devices: int
) -> list[CellRuns]:
    """The benchmark of `workload` (its strategies and the ceiling over `devices`), each cell planned or skipped."""
    return [plan_cell(raw_params, cell) for cell in benchmark_cells(workload, strategies, devices)]


@dataclass(frozen=True)
class SweepPoint:
    """Where a cell sits on the figure: a curve and a value, or a reference line (value None)."""

    curve: str
    value: Any = None


def sweep_cells(sweep: Sweep, scale: str) -> list[tuple[SweepPoint, Cell]]:
    """The reference lines first, then every curve's cells in the order of the scale's values, each under its
    curve's `strategy` where it names one, else the sweep's."""
    points = [(SweepPoint(strategy), Cell(sweep.workload, strategy)) for strategy in REFERENCE_LINES]
    for curve, value, overrides in sweep.cells(scale):
        strategy = overrides.pop("strategy", sweep.strategy)
        points.append((SweepPoint(curve, value), Cell(sweep.workload, strategy, tuple(overrides.items()))))
    return points


def plan_sweep(raw_params: dict[str, Any], sweep: Sweep, scale: str) -> list[tuple[SweepPoint, CellRuns]]:
    """Each of the sweep's cells at `scale`, on the inputs the sweep names, planned or skipped, with its point."""
    return [(point, plan_cell(sweep_params(raw_params, sweep), cell)) for point, cell in sweep_cells(sweep, scale)]
