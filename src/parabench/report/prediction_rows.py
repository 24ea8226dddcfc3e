"""The prediction's results as table rows, for the report page and make run's summary: the probe's fits, each check
and each order check."""

from parabench.records import (
    CollectiveFit,
    OrderCheck,
    PredictionCheck,
    Probe,
    Probed,
)


def probe_rows(probe: Probe) -> list[dict[str, str]]:
    """The probe as a table: per collective its fitted latency and bandwidth, the share of its time a rank keeps a
    CPU busy, and its bus bandwidth at the largest message, or why the backend could not run it (none where the probe
    ran on one device)."""
    rows = []
    for collective, measured in probe.collectives.items() if isinstance(probe, Probed) else ():
        if not isinstance(measured, CollectiveFit):
            rows.append(
                {
                    "collective": collective,
                    "latency": "-",
                    "bandwidth": "-",
                    "CPU busy": "-",
                    "busbw at largest": measured.reason,
                }
            )
            continue
        largest = measured.points[-1]
        rows.append(
            {
                "collective": collective,
                "latency": f"{1e6 * measured.latency_s:.0f} us",
                "bandwidth": f"{measured.bandwidth_bytes_per_s / 1e9:.3g} GB/s",
                "CPU busy": f"{measured.cpu_share:.0%}",
                "busbw at largest": f"{largest.busbw_bytes_per_s / 1e9:.3g} GB/s at {largest.bytes:,} B",
            }
        )
    return rows


def order_row(order: OrderCheck) -> dict[str, str]:
    """One order check as the page and make run's summary show it."""
    return {
        "measured faster": order.faster,
        "than": order.slower,
        "measured": f"{order.measured_ratio:.2f}x ({order.measured_ci95[0]:.2f}-{order.measured_ci95[1]:.2f})",
        "predicted": f"{order.predicted_ratio:.2f}x",
        "same order": "yes" if order.agrees else "NO",
    }


def check_row(check: PredictionCheck) -> dict[str, str]:
    """One check as the page and make run's summary show it: the cell, its predicted and measured step, the error and
    whether it is within the goal (with what was allowed where not)."""
    return {
        "cell": check.cell,
        "predicted step (s)": f"{check.predicted_step_s:.4g}",
        "measured step (s)": f"{check.measured_step_s:.4g}",
        "error": f"{check.error:+.0%}",
        "within goal": "yes" if check.within else f"NO (allowed {check.allowed_error:.0%})",
    }
