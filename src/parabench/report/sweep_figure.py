"""A sweep's figure, like seed 001's split_size_tradeoff: median step time per value and curve, quartile error bars,
and the reference strategies as horizontal lines with their quartile bands."""

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from parabench.io import write_atomic
from parabench.records import SkippedCell, StepTimes
from parabench.report.figure_notes import add_notes

LINE_COLOURS = ("#555555", "#c44e52")  # the reference lines' (the baseline's first), in registry order


def draw(
    title: str,
    param: str,
    tables: dict[str, pd.DataFrame],
    lines: dict[str, StepTimes | SkippedCell],
    notes: list[str],
    path: Path,
) -> None:
    """Write the sweep's figure as a PNG."""
    figure = sweep_figure(title, param, tables, lines, notes)
    write_atomic(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))
    plt.close(figure)


def sweep_figure(
    title: str, param: str, tables: dict[str, pd.DataFrame], lines: dict[str, StepTimes | SkippedCell], notes: list[str]
) -> Figure:
    """One line per curve with p25-p75 error bars; a dashed line per reference that ran; notes under the chart."""
    figure, axis = plt.subplots(figsize=(7, 4.5))
    values: list[Any] = []
    for curve, table in tables.items():
        errors = [table["median_s"] - table["p25_s"], table["p75_s"] - table["median_s"]]
        axis.errorbar(table["value"], table["median_s"], yerr=errors, marker="o", capsize=4, label=curve)
        values += [value for value in table["value"] if value not in values]
    for index, (reference, line) in enumerate(lines.items()):
        if isinstance(line, StepTimes):
            colour = LINE_COLOURS[index % len(LINE_COLOURS)]
            axis.axhline(line.median, linestyle="--", color=colour, label=reference)
            axis.axhspan(line.p25, line.p75, color=colour, alpha=0.12)
    if values and all(isinstance(value, (int, float)) and value > 0 for value in values):
        axis.set_xscale("log")
        axis.set_xticks(values, [str(value) for value in values])
        axis.minorticks_off()
    axis.set_xlabel(param)
    axis.set_ylabel("seconds per step (median; bars and bands: p25 to p75)")
    axis.yaxis.grid(True)
    axis.legend(fontsize=8)
    axis.set_title(title, fontsize=9)
    add_notes(figure, notes)
    return figure
