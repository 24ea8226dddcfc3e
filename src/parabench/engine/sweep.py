"""A sweep's cells: its workload under its strategy with one params key at each value, once per curve, and the
reference strategies beside them (timed in the same interleaved rounds, so the lines compare)."""

from dataclasses import dataclass
from typing import Any

from parabench.config import Sweep
from parabench.engine.cells import Cell

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
