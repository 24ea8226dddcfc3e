"""The benchmark bar chart: samples/s per strategy with the spread over rounds, as in seed 001's figure."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from parabench.io import write_atomic  # noqa: E402


def draw(rows: pd.DataFrame, skipped: list[tuple[str, str, str]], path: Path) -> None:
    """One panel per workload: a bar per strategy that ran (error bars: slowest and fastest round),
    and a note under the panels for each strategy that was skipped."""
    workloads = sorted(set(rows["workload"]) | {workload for workload, _, _ in skipped})
    figure, axes = plt.subplots(1, max(1, len(workloads)), figsize=(6 * max(1, len(workloads)), 4.5), squeeze=False)
    for axis, workload in zip(axes[0], workloads):
        ran = rows[rows["workload"] == workload]
        errors = [ran["samples_per_s"] - ran["samples_per_s_min"], ran["samples_per_s_max"] - ran["samples_per_s"]]
        bars = axis.bar(ran["strategy"], ran["samples_per_s"], yerr=errors, capsize=6, color="#4c72b0")
        for bar, top, speedup, virtual in zip(bars, ran["samples_per_s_max"], ran["speedup"], ran["devices_virtual"]):
            label = (f"{speedup:.2f}x" if pd.notna(speedup) else "") + ("\nvirtual devices" if virtual else "")
            axis.annotate(label, (bar.get_x() + bar.get_width() / 2, top), ha="center", va="bottom", fontsize=8,
                          xytext=(0, 3), textcoords="offset points")
        axis.set_title(workload)
        axis.set_ylabel("samples/s (median; bars: slowest to fastest round)")
        axis.tick_params(axis="x", rotation=30)
    notes = [f"{strategy} on {workload} skipped: {reason.splitlines()[0]}" for workload, strategy, reason in skipped]
    if notes:
        figure.text(0.01, 0.01, "\n".join(notes), fontsize=7, va="bottom", wrap=True)
        figure.subplots_adjust(bottom=0.2 + 0.04 * len(notes))
    figure.suptitle("Training throughput by strategy (speedup vs single above each bar)")
    write_atomic(path, lambda tmp: figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))
    plt.close(figure)
