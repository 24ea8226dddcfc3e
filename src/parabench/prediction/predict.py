"""What more devices would buy here: the checks at the measured cells and the extension to predict.devices, as the
predict stage writes them (results/prediction/, and two values for `dvc exp show`)."""

import statistics
from typing import Any

from parabench.config import PredictOptions
from parabench.prediction.checks import MEDIAN_GOAL, PREDICTED, checked_across_nodes, checked_cells, order_checks
from parabench.prediction.collectives import Link, Links
from parabench.prediction.extension import bottleneck, extended
from parabench.prediction.links import measured_links
from parabench.records import (
    Cell,
    CellsSummary,
    FittedLink,
    PredictionResults,
    Probe,
    RunRecord,
    ran,
)
from parabench.strategies.details import Details
from parabench.strategies.registry import BASELINE, HEADLINE, STRATEGIES
from parabench.workloads.contract import Scaling


def predict(
    benchmark: CellsSummary,
    options: PredictOptions,
    scaling: Scaling,
    probe: Probe,
    network: Probe,
    train: RunRecord | None = None,
) -> PredictionResults:
    """The checks at the measured cells (and at the `train` run, where it spanned several nodes: checked_across_nodes)
    and the extension to predict.devices under the workload's `scaling` rule (module docstring), from the
    benchmark's summarised cells and the probe's results."""
    cells = benchmark.cells
    single = ran(cells, BASELINE)
    if single is None:
        return PredictionResults(
            links=None,
            checks=[],
            order_checks=[],
            median_abs_error=None,
            max_abs_error=None,
            within_goal=False,
            predictions=[],
            bottleneck=None,
            scaling=scaling,
            why_none="single did not run in the benchmark (benchmark.strategies)",
            probe=probe,
        )
    links = measured_links(probe)
    across_nodes = checked_across_nodes(train, cells, probe, network)
    checks = checked_cells(cells, links) + ([across_nodes] if across_nodes else [])
    orders = order_checks(checks, cells, benchmark.noise.floor)
    errors = [abs(check.error) for check in checks]
    median_error = statistics.median(errors) if errors else None
    return PredictionResults(
        links=None if links is None else fitted_links(links),
        checks=checks,
        median_abs_error=median_error,
        max_abs_error=max(errors) if errors else None,
        order_checks=orders,
        within_goal=median_error is not None
        and median_error <= MEDIAN_GOAL
        and all(check.within for check in checks)
        and all(order.agrees for order in orders),
        scaling=scaling,
        predictions=extended(single, recorded_details(cells), options, scaling, probe, network),
        bottleneck=bottleneck(single, options, scaling, probe, network),
        probe=probe,
    )


def recorded_details(cells: dict[str, Cell]) -> dict[str, Details]:
    """What each predicted strategy's benchmark cell recorded of itself, in its own type, where it ran."""
    return {
        name: STRATEGIES[name].details_of(figures.strategy_details)
        for name in PREDICTED
        if (figures := ran(cells, name)) is not None
    }


def fitted_links(links: Links) -> dict[str, FittedLink]:
    """Each collective's link as the results record it: its latency and bandwidth."""
    return {
        collective: FittedLink(latency_s=link.latency_s, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s)
        for collective, link in vars(links).items()
        if isinstance(link, Link)
    }


def compact(prediction: PredictionResults, options: PredictOptions) -> dict[str, Any]:
    """Two values for `dvc exp show`: the prediction's median error at the measured cells, and what the headline
    strategy (ddp) would make of the largest device count (results/prediction/ hold the rest, whether each check met
    its goal among it)."""
    largest = max(options.devices)
    rows = prediction.predictions
    headline = next((row for row in rows if row.strategy == HEADLINE and row.devices == largest), None)
    error = prediction.median_abs_error
    return {
        "prediction_median_error": None if error is None else float(f"{error:.3g}"),
        f"{HEADLINE}_efficiency_at_{largest}": None if headline is None else float(f"{headline.efficiency:.3g}"),
    }
