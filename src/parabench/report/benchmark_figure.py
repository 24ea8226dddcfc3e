"""The benchmark figure of one workload: rate per cell with its 95% interval, as in seed 001's figure, and
beside it where each cell's median step goes (report.time_split's parts, stacked)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from parabench.io import write_atomic
from parabench.report.figure_notes import add_notes
from parabench.report.time_split import PART_MEANINGS

PART_COLOURS = {
    "input": "#8c8c8c",
    "compute": "#4c72b0",
    "imbalance": "#64b5cd",
    "bubble": "#ccb974",
    "communication": "#dd8452",
    "forward_backward": "#8172b3",
    "optimizer": "#55a868",
    "idle": "#c44e52",
}


def draw(workload: str, rows: pd.DataFrame, skipped: list[tuple[str, str]], machine: str, path: Path) -> None:
    """Write the workload's benchmark figure, measured on `machine` (its title says so), as a PNG."""
    figure = benchmark_figure(workload, rows, skipped, machine)
    write_atomic(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))
    plt.close(figure)


def benchmark_figure(workload: str, rows: pd.DataFrame, skipped: list[tuple[str, str]], machine: str) -> Figure:
    """Left, a bar per cell that ran (error bars: its 95% interval, speedup and efficiency above); right,
    each cell's median step split into its parts; a note under the charts for each cell that was skipped."""
    height = 2.6 + 0.35 * len(rows)
    figure, (rates, split) = plt.subplots(1, 2, figsize=(13, height), sharey=True)
    figure.subplots_adjust(wspace=0.08, top=1 - 0.9 / height)
    if not rows.empty:
        draw_rates(rates, rows)
        draw_split(split, rows)
    add_notes(figure, [f"{cell} skipped: {reason.splitlines()[0]}" for cell, reason in skipped])
    figure.suptitle(
        f"{workload}: training throughput by strategy, and where a step goes\nmeasured on {machine}", fontsize=10
    )
    return figure


def draw_rates(axis: Axes, rows: pd.DataFrame) -> None:
    """Rate per cell (median, a horizontal bar each, cells in the split's order), its 95% interval as error bars,
    the speedup vs single (paired by turn) and efficiency against the ceiling beside each bar."""
    errors = [rows["rate"] - rows["rate_low"], rows["rate_high"] - rows["rate"]]
    colours = ["#999999" if cell == "ceiling" else "#4c72b0" for cell in rows["cell"]]
    bars = axis.barh(rows["cell"], rows["rate"], xerr=errors, capsize=4, color=colours)
    for bar, end, speedup, efficiency in zip(bars, rows["rate_high"], rows["speedup"], rows["efficiency_vs_ceiling"]):
        label = f"{speedup:.2f}x" if pd.notna(speedup) else ""
        label += f", {efficiency:.0%} of ceiling" if pd.notna(efficiency) else ""
        axis.annotate(
            label,
            (end, bar.get_y() + bar.get_height() / 2),
            ha="left",
            va="center",
            fontsize=8,
            xytext=(4, 0),
            textcoords="offset points",
        )
    axis.invert_yaxis()
    axis.margins(x=0.45)
    axis.set_xlim(left=0)
    axis.set_xlabel(f"{rows['unit'].iloc[0]}s/s (median; bars: its 95% interval)")
    axis.set_title("throughput (speedup vs single, paired by turn; grey: the machine's ceiling)", fontsize=9)


def draw_split(axis: Axes, rows: pd.DataFrame) -> None:
    """Each cell's median step as stacked parts, in seconds; a legend beside it names the parts that occur (the
    report and README say what each means: time_split.PART_MEANINGS)."""
    left = pd.Series(0.0, index=rows.index)
    for part in PART_MEANINGS:
        seconds = rows[f"{part}_s"]
        if seconds.notna().any():
            axis.barh(rows["cell"], seconds.fillna(0.0), left=left, color=PART_COLOURS[part], label=part)
            left += seconds.fillna(0.0)
    axis.tick_params(axis="y", left=False)
    axis.set_xlabel("seconds per step (median step, split into measured parts)")
    axis.set_title("where a step goes", fontsize=9)
    axis.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
