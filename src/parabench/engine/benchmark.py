"""The benchmark: every listed strategy, each run in fresh worker processes, interleaved over rounds."""

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parabench.config import PARAMS_FILE, Params
from parabench.engine.hardware import resolve
from parabench.engine.launch import run_command, worker_command
from parabench.engine.plan import RunPlan, make_plan
from parabench.errors import ConfigError, StrategyUnavailable
from parabench.io import read_json
from parabench.workloads import WORKLOADS

log = logging.getLogger("parabench.benchmark")


@dataclass
class StrategyRuns:
    """One strategy's runs on one workload, or why it was skipped."""

    workload: str
    strategy: str
    plan: RunPlan | None
    skipped_reason: str | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)


def plan_all(params: Params) -> list[StrategyRuns]:
    """Plan every (workload, strategy); a strategy that cannot run here is skipped with its reason."""
    machine = resolve(params.hardware)
    planned = []
    for workload in WORKLOADS:
        for strategy in params.benchmark.strategies:
            try:
                plan = make_plan(params, workload, "benchmark", machine, strategy_name=strategy)
                planned.append(StrategyRuns(workload, strategy, plan))
            except (StrategyUnavailable, ConfigError) as reason:
                log.warning("benchmark: %s on %s skipped: %s", strategy, workload, reason)
                planned.append(StrategyRuns(workload, strategy, None, skipped_reason=str(reason)))
    return planned


def interleaved(runnable: list[StrategyRuns], round_index: int) -> list[StrategyRuns]:
    """This round's order: the list rotated by the round number, so no strategy always goes first."""
    shift = round_index % len(runnable) if runnable else 0
    return runnable[shift:] + runnable[:shift]


def run_benchmark(params: Params, params_path: Path = PARAMS_FILE) -> list[StrategyRuns]:
    """Run every runnable strategy once per round, in rotating order; collect each run's step times.

    `params` must be what `params_path` holds: the workers read the file themselves.
    """
    planned = plan_all(params)
    runnable = [entry for entry in planned if entry.plan is not None]
    with tempfile.TemporaryDirectory(prefix="parabench-bench-") as scratch:
        for round_index in range(params.benchmark.rounds):
            for entry in interleaved(runnable, round_index):
                assert entry.plan is not None
                out = Path(scratch) / f"{entry.workload}-{entry.strategy}-{round_index}.json"
                log.info("benchmark round %d/%d: %s on %s", round_index + 1, params.benchmark.rounds,
                         entry.strategy, entry.workload)
                command = worker_command(entry.plan, "parabench.engine.bench_worker",
                                         [entry.workload, entry.strategy, str(out), "--params", str(params_path)])
                run_command(entry.plan, command, f"the benchmark of {entry.strategy} on {entry.workload}")
                entry.runs.append(read_json(out))
    return planned

