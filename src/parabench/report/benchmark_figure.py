"""The benchmark bar chart of one workload: rate per cell with the spread over rounds, as in seed 001's figure."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from parabench.io import write_atomic  # noqa: E402


def draw(workload: str, rows: pd.DataFrame, skipped: list[tuple[str, str]], path: Path) -> None:
    """A bar per cell that ran (error bars: slowest and fastest round, speedup and efficiency above), and a note
    under the chart for each cell that was skipped."""
    figure, axis = plt.subplots(figsize=(7, 4.5))
    if not rows.empty:
        errors = [rows["rate"] - rows["rate_slowest_round"], rows["rate_fastest_round"] - rows["rate"]]
        colours = ["#999999" if cell == "ceiling" else "#4c72b0" for cell in rows["cell"]]
        bars = axis.bar(rows["cell"], rows["rate"], yerr=errors, capsize=6, color=colours)
        for bar, top, speedup, efficiency in zip(bars, rows["rate_fastest_round"], rows["speedup"],
                                                 rows["efficiency_vs_ceiling"]):
            label = f"{speedup:.2f}x" if pd.notna(speedup) else ""
            label += f"\n{efficiency:.0%} of ceiling" if pd.notna(efficiency) else ""
            axis.annotate(label, (bar.get_x() + bar.get_width() / 2, top), ha="center", va="bottom", fontsize=8,
                          xytext=(0, 3), textcoords="offset points")
        axis.set_ylabel(f"{rows['unit'].iloc[0]}s/s (median; bars: slowest to fastest round)")
        axis.tick_params(axis="x", rotation=30)
    notes = [f"{cell} skipped: {reason.splitlines()[0]}" for cell, reason in skipped]
    if notes:
        figure.text(0.01, 0.01, "\n".join(notes), fontsize=7, va="bottom", wrap=True)
        figure.subplots_adjust(bottom=0.25 + 0.05 * len(notes))
    axis.set_title(f"{workload}: training throughput by strategy (speedup vs single; grey: the machine's ceiling)",
                   fontsize=9)
    write_atomic(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))
    plt.close(figure)
