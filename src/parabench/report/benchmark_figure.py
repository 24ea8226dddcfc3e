"""The benchmark figure of one workload: rate per cell with the spread over rounds, as in seed 001's figure, and
beside it where each cell's median step goes (report.time_split's parts, stacked)."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from parabench.io import write_atomic  # noqa: E402
from parabench.report.time_split import PART_MEANINGS  # noqa: E402

PART_COLOURS = {"input": "#8c8c8c", "compute": "#4c72b0", "imbalance": "#64b5cd", "bubble": "#ccb974",
                "communication": "#dd8452", "forward_backward": "#8172b3", "optimizer": "#55a868", "idle": "#c44e52"}


def draw(workload: str, rows: pd.DataFrame, skipped: list[tuple[str, str]], machine: str, path: Path) -> None:
    """Write the workload's benchmark figure, measured on `machine` (its title says so), as a PNG."""
    figure = benchmark_figure(workload, rows, skipped, machine)
    write_atomic(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))
    plt.close(figure)


def benchmark_figure(workload: str, rows: pd.DataFrame, skipped: list[tuple[str, str]], machine: str) -> Figure:
    """Left, a bar per cell that ran (error bars: slowest and fastest round, speedup and efficiency above); right,
    each cell's median step split into its parts; a note under the charts for each cell that was skipped."""
    figure, (rates, split) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.1]})
    figure.subplots_adjust(wspace=0.4, top=0.84)
    if not rows.empty:
        draw_rates(rates, rows)
        draw_split(split, rows)
    notes = [f"{cell} skipped: {reason.splitlines()[0]}" for cell, reason in skipped]
    if notes:
        figure.text(0.01, 0.01, "\n".join(notes), fontsize=7, va="bottom", wrap=True)
        figure.subplots_adjust(bottom=0.25 + 0.05 * len(notes))
    figure.suptitle(f"{workload}: training throughput by strategy, and where a step goes\nmeasured on {machine}",
                    fontsize=10)
    return figure


def draw_rates(axis: Axes, rows: pd.DataFrame) -> None:
    """Rate per cell (median), the rounds' spread as error bars, the speedup vs single and efficiency above."""
    errors = [rows["rate"] - rows["rate_slowest_round"], rows["rate_fastest_round"] - rows["rate"]]
    colours = ["#999999" if cell == "ceiling" else "#4c72b0" for cell in rows["cell"]]
    bars = axis.bar(rows["cell"], rows["rate"], yerr=errors, capsize=6, color=colours)
    for bar, top, speedup, efficiency in zip(bars, rows["rate_fastest_round"], rows["speedup"],
                                             rows["efficiency_vs_ceiling"]):
        label = f"{speedup:.2f}x" if pd.notna(speedup) else ""
        label += f"\n{efficiency:.0%} of ceiling" if pd.notna(efficiency) else ""
        axis.annotate(label, (bar.get_x() + bar.get_width() / 2, top), ha="center", va="bottom", fontsize=8,
                      xytext=(0, 3), textcoords="offset points")
    axis.margins(y=0.2)
    axis.set_ylabel(f"{rows['unit'].iloc[0]}s/s (median; bars: slowest to fastest round)")
    axis.set_title("throughput (speedup vs single; grey: the machine's ceiling)", fontsize=9)
    axis.tick_params(axis="x", rotation=30)


def draw_split(axis: Axes, rows: pd.DataFrame) -> None:
    """Each cell's median step as stacked parts, in seconds; a legend names only the parts that occur."""
    left = pd.Series(0.0, index=rows.index)
    for part, meaning in PART_MEANINGS.items():
        seconds = rows[f"{part}_s"]
        if seconds.notna().any():
            axis.barh(rows["cell"], seconds.fillna(0.0), left=left, color=PART_COLOURS[part],
                      label=f"{part}: {meaning}")
            left += seconds.fillna(0.0)
    axis.invert_yaxis()
    axis.set_xlabel("seconds per step (median step, split into measured parts)")
    axis.set_title("where a step goes", fontsize=9)
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), fontsize=7, ncol=1, frameon=False)
