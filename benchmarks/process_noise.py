"""Benchmark: the per-process part of a timing. `single` timed in several processes at once, through the benchmark's
own cell runner (turns of one step, idle jobs paused), so that each process's median step can be set against the
others' with the per-step part (what the steps of one run leave unknown) beside it.

    python benchmarks/process_noise.py [--workload fashion_mnist] [--processes 4] [--turns 30]

The first process is the reference; each other one is a control in a job of its own, as the benchmark's A/A control
is. For each, its ratio to the reference (paired by turn, with its 95% interval: stats.ratio_interval) is printed;
then the per-step part, the intervals' median half-width, and the per-process part: the spread (standard deviation,
on a log scale) of the processes' levels, the reference's included, beyond what their intervals explain (the
variance less their squared standard errors). A per-process part near 0 says one A/A control is a fair noise floor;
a large one says two processes running the same thing differ by that much here, and the floor must allow it.
"""

import argparse
import math
import statistics
from typing import Any

from parabench.config import validate_params, with_overrides
from parabench.engine.cells import Cell, CellRuns, plan_cell, run_cells
from parabench.params_file import read_raw_params
from parabench.runtime.environment import machine_identity, machine_line
from parabench.runtime.hardware import resolve
from parabench.runtime.step_signs import kept_steps
from parabench.stats import Z_95, ratio_interval


def planned(workload: str, processes: int, raw: dict[str, Any], scale: str) -> list[CellRuns]:
    """`single` on `workload`, once as itself and once per other process as a control of its own."""
    return [plan_cell(raw, Cell(workload, "single", control=number), scale) for number in range(processes)]


def per_process_part(ratios: list[tuple[float, float, float]]) -> tuple[float, float]:
    """The per-step part (the median half-width of the ratios' intervals, log scale) and the per-process part: the
    spread on a log scale of every process's level (the reference's at 0, each other's at its ratio to it) beyond
    what their standard errors explain, sqrt(variance - mean squared error), 0 when none."""
    logs = [0.0, *(math.log(point) for point, _, _ in ratios)]
    errors = [0.0, *(math.log(high / low) / 2 / Z_95 for _, low, high in ratios)]
    per_step = statistics.median(math.log(high / low) / 2 for _, low, high in ratios)
    spread = statistics.variance(logs) - statistics.fmean(error**2 for error in errors)
    return per_step, math.sqrt(max(0.0, spread))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="fashion_mnist")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    turns = {"benchmark.min_turns": args.turns, "benchmark.max_turns": args.turns, "benchmark.max_timed_s": 1e9}
    raw = with_overrides(read_raw_params(), turns)
    params = validate_params(raw, f"params.yaml with {turns}")
    scale = params.timing_scale(resolve(params.hardware).accelerator)
    cells = planned(args.workload, args.processes, raw, scale)
    stage = run_cells(cells, params.benchmark, f"process_noise@{args.workload}")
    reference = kept_steps(cells[0].turns)
    ratios = [ratio_interval(reference, kept_steps(entry.turns)) for entry in cells[1:]]
    print(f"{args.workload}: {args.processes} processes of single, {stage.turns} turns of one step each")
    print(f"  reference median step {statistics.median(step for turn in reference for step in turn) * 1000:.1f} ms")
    for entry, (point, low, high) in zip(cells[1:], ratios, strict=True):
        print(f"  {entry.cell.label}: {point:.3f}x the reference (95%: {low:.3f}-{high:.3f})")
    per_step, per_process = per_process_part(ratios)
    print(f"  per-step part: +-{math.expm1(per_step):.1%}; per-process part: {math.expm1(per_process):.1%} (sd)")
    print(f"  measured on {machine_line(machine_identity())}")


if __name__ == "__main__":
    main()
