"""Stage benchmark@<workload>: every listed strategy and the machine's ceiling, interleaved over rounds, as timed
(speedup@<workload> summarises them)."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.cells import plan_benchmark, run_cells, write_cell_runs
from parabench.params_file import read_raw_params
from parabench.paths import results_file
from parabench.runtime.hardware import resolve
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    params, raw = load_params(), read_raw_params()
    options, machine = params.benchmark, resolve(params.hardware)
    scale = params.timing_scale(machine.accelerator)
    planned = plan_benchmark(raw, args.workload, options.strategies, machine.devices, scale)
    stage = run_cells(planned, options, f"benchmark@{args.workload}")
    write_cell_runs(results_file("benchmark_cells", args.workload), planned, stage)


if __name__ == "__main__":
    stage_main(main)
