"""Benchmark and sweep cells: a workload under a strategy with overrides, kept alive in its job's workers, timed in
turns.

The benchmark stage and the sweeps share this runner; every cell runs the same steps. A timing stage writes what it
measured as measured (write_cell_runs); the speedup and sweep_summary stages draw the figures from that file
(read_cell_runs), so an edit of how results are summarised re-times nothing. A cell that cannot run here
is planned as skipped, with its reason, before any heavy work. Every cell's worker is launched at once; each cell is
set up alone (model, warm-up); then the cells take turns of `turn_steps` steps, turn t of every cell within seconds of
the others', the order rotated every turn (a cyclic Latin square: over as many turns as cells, every cell takes every
place). After `min_turns`, turns go on until every cell's speedup over `single` (or, without single, its median step)
is known within `within`, or `max_turns` have run, or the stage has timed `max_timed_s` seconds of steps. A cell
whose steps take less than `min_turn_s` a turn (a GPU's milliseconds) takes as many more steps a turn, as timeit's
autorange does. The benchmark times `single` twice, as two cells in two processes (the A/A control): their ratio is
the run's own noise floor.
"""

import logging
import math
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from parabench.config import CellTiming, Sweep, sweep_params, validate_params, with_overrides
from parabench.engine.cell_jobs import CellJob, CellJobs
from parabench.engine.plan import RunPlan, make_plan
from parabench.errors import ConfigError, StrategyUnavailable
from parabench.io import read_json, write_json
from parabench.params_file import PARAMS_FILE
from parabench.records import CellRun, CellSetup, CellTurn, StageShares
from parabench.runtime.environment import machine_identity
from parabench.runtime.hardware import Machine, resolve
from parabench.runtime.step_signs import kept_steps
from parabench.stats import median_interval, ratio_interval
from parabench.strategies.registry import BASELINE, REFERENCE_LINES

log = logging.getLogger("parabench.cells")
CEILING = "ceiling"
CONTROL = "single_control"  # the A/A control: single timed again, as a cell of its own
MAX_LENGTHENING = 16  # a turn takes at most 16 times timing's turn_steps
SETTLE_EVERY = 5  # turns between two looks at which cells are known within their goal (a look bootstraps each one)


@dataclass(frozen=True)
class Cell:
    """What to measure: a workload under a strategy with params overrides; `copies` independent copies at once."""

    workload: str
    strategy: str
    overrides: tuple[tuple[str, Any], ...] = ()
    copies: int = 1
    control: int = 0  # k > 0: the k-th control, the same run as another cell, timed in a job of its own

    @property
    def alone(self) -> bool:
        """Whether the cell has a job of its own: `single`, which every ratio is taken against, and each A/A control,
        so that the two differ only by being two processes, with no other cell's model beside either."""
        return self.strategy == BASELINE and self.copies == 1 and not self.overrides

    @property
    def label(self) -> str:
        """The cell's name in results: the strategy, its overrides, `ceiling` for side-by-side copies, or
        `single_control` for the A/A control (`single_control_<k>` for a k-th)."""
        if self.copies > 1:
            return CEILING
        if self.control:
            return CONTROL if self.control == 1 else f"{CONTROL}_{self.control}"
        return " ".join([self.strategy, *(f"{key}={value}" for key, value in self.overrides)])


@dataclass
class CellRuns:
    """A cell's plan and what was measured of it (its setup, then its turns, then the whole run), or why it was
    skipped."""

    cell: Cell
    plan: RunPlan | None
    skipped_reason: str | None = None
    run: CellRun | None = None
    setup: CellSetup | None = None
    turns: list[CellTurn] = field(default_factory=list)


def this_node(machine: Machine) -> Machine:
    """The machine as one node: benchmark and sweep cells time this node's processes (the other nodes would have
    to join every turn of every cell), whatever hardware.nodes says for train and reference."""
    return machine.model_copy(update={"nodes": 1})


def plan_cell(raw_params: dict[str, Any], cell: Cell, scale: str) -> CellRuns:
    """Validate the params with the cell's overrides, at `scale`, and plan it; a cell that cannot run is skipped, with
    why."""
    overrides = {**dict(cell.overrides), "scale": scale}
    params = validate_params(with_overrides(raw_params, overrides), f"{PARAMS_FILE} with {overrides}")
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


def interleaved(runnable: list[CellRuns], turn_index: int) -> list[CellRuns]:
    """This turn's order: the list rotated by the turn's number (a cyclic Latin square), so no cell always goes
    first and, over as many turns as cells, every cell takes every place."""
    shift = turn_index % len(runnable) if runnable else 0
    return runnable[shift:] + runnable[:shift]


def turn_length(timing: CellTiming, setup: CellSetup) -> int:
    """Steps a turn of the cell takes: timing.turn_steps, or, where that many of its last warm-up step would take
    less than timing.min_turn_s, as many more as bring a turn to it (at most MAX_LENGTHENING times as many)."""
    if not setup.warmup_step_durations:
        return timing.turn_steps
    turn_s = setup.warmup_step_durations[-1] * timing.turn_steps
    return timing.turn_steps * min(MAX_LENGTHENING, max(1, math.ceil(timing.min_turn_s / turn_s)))


def timed_scale(entries: Sequence[CellRuns]) -> str | None:
    """The scale a stage's cells were planned and timed at (benchmark.scale_on); None where no cell could be planned."""
    return next((entry.plan.scale for entry in entries if entry.plan is not None), None)


def turn_steps(entry: CellRuns) -> list[list[float]]:
    """The cell's step times so far, turn by turn, its disturbed steps left out."""
    return kept_steps(entry.turns)


def known_within(entry: CellRuns, reference: CellRuns | None, within: float) -> bool:
    """Whether the cell's speedup over `reference` (its median step where there is none) is known within `within`:
    its 95% interval's half-width over its value. Not while no turn of it (paired with one of `reference`) kept a step:
    every step disturbed so far tells nothing yet."""
    mine = turn_steps(entry)
    theirs = turn_steps(reference) if reference is not None else mine
    if not any(top and bottom for top, bottom in zip(theirs, mine, strict=False)):
        return False
    point, low, high = median_interval(mine) if reference is None else ratio_interval(theirs, mine)
    return (high - low) / 2 <= within * point


@dataclass
class StageTime:
    """Where a timing stage's seconds went: all of it, starting worker processes, setting up the cells, and the timed
    steps themselves."""

    wall_s: float = 0.0
    start_up_s: float = 0.0
    setup_s: float = 0.0
    timed_steps_s: float = 0.0
    jobs_started: int = 0
    turns: int = 0

    def shares(self) -> StageShares:
        """The seconds and the shares of the wall time, as results record them."""
        wall = self.wall_s or float("nan")
        return StageShares(
            wall_s=self.wall_s,
            start_up_s=self.start_up_s,
            setup_s=self.setup_s,
            timed_steps_s=self.timed_steps_s,
            start_up_share=self.start_up_s / wall,
            setup_share=self.setup_s / wall,
            timed_steps_share=self.timed_steps_s / wall,
            jobs_started=self.jobs_started,
            turns=self.turns,
        )

    def described(self) -> str:
        """Where the seconds went, in a line for the log."""
        return (
            f"{self.wall_s:.0f} s, {100 * self.start_up_s / self.wall_s:.0f}% starting workers ({self.jobs_started} "
            f"jobs), {100 * self.setup_s / self.wall_s:.0f}% setting cells up, "
            f"{100 * self.timed_steps_s / self.wall_s:.0f}% in timed steps ({self.turns} turns)"
        )


def run_cells(planned: list[CellRuns], timing: CellTiming, what: str) -> StageTime:
    """Launch every runnable cell's worker at once, set each cell up alone, then time the cells in turns, in rotating
    order: every cell at least timing.min_turns turns; then, looked at every SETTLE_EVERY turns, a cell whose speedup
    over `single` is known within timing.within takes no more turns (its turns so far stay paired with single's), so
    the noisier cells get the time the settled ones leave, until every cell is settled, or timing.max_turns turns, or
    timing.max_timed_s seconds of timed steps. `single` takes every turn. Keeps each cell's run in its CellRuns;
    returns where the stage's time went."""
    began, stage = time.monotonic(), StageTime()
    runnable = [entry for entry in planned if entry.plan is not None]
    for plan in (entry.plan for entry in runnable if entry.plan is not None):
        plan.workload.prefetch(plan.settings)
    with (
        tempfile.TemporaryDirectory(prefix="parabench-cells-") as scratch,
        CellJobs(Path(scratch), what) as jobs,
    ):
        job_of = {
            entry.cell.label: jobs.of(entry.plan, owner=entry.cell.label if entry.cell.alone else "")
            for entry in runnable
            if entry.plan
        }
        stage.jobs_started = len(jobs.jobs)
        ready_s = max((job.joined() for job in jobs.jobs.values()), default=0.0)
        stage.start_up_s = time.monotonic() - began
        log.info("%s: %d jobs ready in %.1f s", what, len(jobs.jobs), ready_s)
        lengths = {}
        for entry in runnable:
            assert entry.plan is not None
            entry.setup = job_of[entry.cell.label].setup(entry.cell.label, entry.plan, timing.warmup_steps)
            lengths[entry.cell.label] = turn_length(timing, entry.setup)
            stage.setup_s += entry.setup.setup_s
        take_turns(runnable, job_of, lengths, timing, stage)
        jobs.stop()
    for entry in runnable:
        assert entry.setup is not None
        entry.run = CellRun(**dict(entry.setup), turns=entry.turns)
    stage.wall_s = time.monotonic() - began
    log.info("%s: %s", what, stage.described())
    return stage


def take_turns(
    runnable: list[CellRuns], job_of: dict[str, CellJob], lengths: dict[str, int], timing: CellTiming, stage: StageTime
) -> None:
    """The cells' turns (run_cells): in rotating order, each its `lengths` steps in its job, until the caps, dropping
    every SETTLE_EVERY turns past timing.min_turns the cells whose speedup over `single` is known within
    timing.within; each turn kept in its CellRuns, the turns and timed seconds counted in `stage`."""
    reference = next((entry for entry in runnable if entry.cell.label == BASELINE), None)
    timing_now = list(runnable)
    with tqdm(total=timing.max_turns, unit="turn", desc="turns", disable=None) as progress:
        for turn_index in range(timing.max_turns):
            for entry in interleaved(timing_now, turn_index):
                turn = job_of[entry.cell.label].turn(entry.cell.label, lengths[entry.cell.label])
                entry.turns.append(turn)
                stage.timed_steps_s += sum(turn.step_durations)
            stage.turns = turn_index + 1
            progress.update()
            if stage.timed_steps_s >= timing.max_timed_s:
                return
            if stage.turns >= timing.min_turns and (stage.turns - timing.min_turns) % SETTLE_EVERY == 0:
                timing_now = [
                    entry
                    for entry in timing_now
                    if entry is reference or not known_within(entry, reference, timing.within)
                ]
                if all(entry is reference for entry in timing_now):
                    return


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
                    "run": entry.run.model_dump(mode="json") if entry.run else None,
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
            CellRun.model_validate(entry["run"]) if entry["run"] else None,
        )
        for entry in measured["cells"]
    ]
    return MeasuredCells(cells, StageTime(**measured["stage"]), measured["environment"])


def benchmark_cells(workload: str, strategies: Sequence[str], devices: int) -> list[Cell]:
    """Every listed strategy, `single` again right after `single` (the A/A control: in every turn the two run next to
    each other, so that their ratio holds what two processes differ by, not the machine's drift over a turn), plus
    `devices` copies of `single` side by side: what the shared machine allows."""
    cells = [Cell(workload, strategy) for strategy in strategies]
    if BASELINE in strategies:
        cells.insert(strategies.index(BASELINE) + 1, Cell(workload, BASELINE, control=1))
    if devices > 1:
        cells.append(Cell(workload, BASELINE, copies=devices))
    return cells


def plan_benchmark(
    raw_params: dict[str, Any], workload: str, strategies: Sequence[str], devices: int, scale: str
) -> list[CellRuns]:
    """The benchmark of `workload` at `scale` (its strategies and the ceiling over `devices`), each cell planned or
    skipped."""
    return [plan_cell(raw_params, cell, scale) for cell in benchmark_cells(workload, strategies, devices)]


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
    return [
        (point, plan_cell(sweep_params(raw_params, sweep), cell, scale)) for point, cell in sweep_cells(sweep, scale)
    ]
