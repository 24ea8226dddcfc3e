"""Benchmark and sweep cells: a workload under a strategy with overrides, timed in fresh workers over rounds.

The benchmark stage and the sweeps share this runner; every cell runs the same steps. A cell that cannot run here
is planned as skipped, with its reason, before any heavy work; rounds rotate the order so that machine noise hits
every cell alike.
"""

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from parabench.config import PARAMS_FILE, Sweep, sweep_params, validate_params, with_overrides
from parabench.engine.plan import RunPlan, make_plan
from parabench.engine.worker import run_plan_workers
from parabench.errors import ConfigError, StrategyUnavailable
from parabench.io import read_json
from parabench.runtime.hardware import Machine, resolve

log = logging.getLogger("parabench.cells")
CEILING = "ceiling"
REFERENCE_LINES = ("single", "model_parallel")


@dataclass(frozen=True)
class Cell:
    """What to measure: a workload under a strategy with params overrides; `copies` independent copies at once."""

    workload: str
    strategy: str
    overrides: tuple[tuple[str, Any], ...] = ()
    copies: int = 1

    @property
    def label(self) -> str:
        """The cell's name in results: the strategy, its overrides, or `ceiling` for side-by-side copies."""
        if self.copies > 1:
            return CEILING
        return " ".join([self.strategy, *(f"{key}={value}" for key, value in self.overrides)])


@dataclass
class CellRuns:
    """A cell's plan and the runs measured for it, or why it was skipped."""

    cell: Cell
    plan: RunPlan | None
    skipped_reason: str | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)


def this_node(machine: Machine) -> Machine:
    """The machine as one node: benchmark and sweep cells time this node's processes (the other nodes would have
    to join every cell of every round), whatever hardware.nodes says for train and reference."""
    return machine.model_copy(update={"nodes": 1})


def plan_cell(raw_params: dict[str, Any], cell: Cell) -> CellRuns:
    """Validate the params with the cell's overrides and plan it; a cell that cannot run is skipped, with why."""
    where = f"{PARAMS_FILE} with {dict(cell.overrides)}" if cell.overrides else str(PARAMS_FILE)
    params = validate_params(with_overrides(raw_params, dict(cell.overrides)), where)
    try:
        plan = make_plan(params, cell.workload, "benchmark", strategy_name=cell.strategy,
                         machine=this_node(resolve(params.hardware)), copies=cell.copies)
    except (StrategyUnavailable, ConfigError) as reason:
        log.warning("%s on %s skipped: %s", cell.label, cell.workload, reason)
        return CellRuns(cell, None, skipped_reason=str(reason))
    return CellRuns(cell, plan)


def interleaved(runnable: list[CellRuns], round_index: int) -> list[CellRuns]:
    """This round's order: the list rotated by the round number, so no cell always goes first."""
    shift = round_index % len(runnable) if runnable else 0
    return runnable[shift:] + runnable[:shift]


def run_cells(planned: list[CellRuns], rounds: int, warmup_steps: int, timed_steps: int) -> None:
    """Run every runnable cell once per round, in rotating order, each in fresh workers; keep each run's times."""
    runnable = [entry for entry in planned if entry.plan is not None]
    for entry in runnable:
        entry.plan.workload.prefetch(entry.plan.settings)
    with (
        tempfile.TemporaryDirectory(prefix="parabench-cells-") as scratch,
        tqdm(total=rounds * len(runnable), unit="cell", desc="cells", disable=None) as progress,
    ):
        for round_index in range(rounds):
            for number, entry in enumerate(interleaved(runnable, round_index)):
                assert entry.plan is not None
                out = Path(scratch) / f"{round_index}-{number}.json"
                log.info("round %d/%d: %s on %s", round_index + 1, rounds, entry.cell.label, entry.cell.workload)
                run_plan_workers(entry.plan, f"the benchmark of {entry.cell.label} on {entry.cell.workload}",
                                 ["--out", str(out), "--warmup", str(warmup_steps), "--steps", str(timed_steps)])
                entry.runs.append(read_json(out))
                progress.update()


def benchmark_cells(workload: str, strategies: list[str], devices: int) -> list[Cell]:
    """Every listed strategy, plus `devices` copies of `single` side by side: what the shared machine allows."""
    cells = [Cell(workload, strategy) for strategy in strategies]
    if devices > 1:
        cells.append(Cell(workload, "single", copies=devices))
    return cells


def plan_benchmark(raw_params: dict[str, Any], workload: str, strategies: list[str], devices: int) -> list[CellRuns]:
    """The benchmark of `workload` (its strategies and the ceiling over `devices`), each cell planned or skipped."""
    return [plan_cell(raw_params, cell) for cell in benchmark_cells(workload, strategies, devices)]


@dataclass(frozen=True)
class SweepPoint:
    """Where a cell sits on the figure: a curve and a value, or a reference line (value None)."""

    curve: str
    value: Any = None


def sweep_cells(sweep: Sweep, scale: str) -> list[tuple[SweepPoint, Cell]]:
    """The reference lines first, then every curve's cells in the order of the scale's values."""
    points = [(SweepPoint(strategy), Cell(sweep.workload, strategy)) for strategy in REFERENCE_LINES]
    points += [(SweepPoint(curve, value), Cell(sweep.workload, sweep.strategy, tuple(overrides.items())))
               for curve, value, overrides in sweep.cells(scale)]
    return points


def plan_sweep(raw_params: dict[str, Any], sweep: Sweep, scale: str) -> list[tuple[SweepPoint, CellRuns]]:
    """Each of the sweep's cells at `scale`, on the inputs the sweep names, planned or skipped, with its point."""
    return [(point, plan_cell(sweep_params(raw_params, sweep), cell)) for point, cell in sweep_cells(sweep, scale)]
