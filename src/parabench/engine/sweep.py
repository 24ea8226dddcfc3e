"""A sweep's cells: its workload under its strategy with one params key at each value, once per curve, and the
reference strategies beside them (timed in the same interleaved rounds, so the lines compare)."""

from dataclasses import dataclass
from typing import Any

from parabench.config import Sweep, sweep_params
from parabench.engine.cells import Cell, CellRuns, plan_cell

REFERENCE_LINES = ("single", "model_parallel")


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
