"""Stage sweep@<name>: one params key over its values (once per curve) beside single and model_parallel, as timed
(sweep_summary@<name> draws its curves)."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.cells import plan_sweep, run_cells, write_cell_runs
from parabench.params_file import read_raw_params
from parabench.paths import results_file
from parabench.runtime.hardware import resolve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sweep")
    args = parser.parse_args()
    params, raw = load_params(), read_raw_params()
    sweep = params.sweep(args.sweep)
    _, planned = zip(*plan_sweep(raw, sweep, params.timing_scale(resolve(params.hardware).accelerator)))
    stage = run_cells(list(planned), sweep, f"sweep@{args.sweep}")
    write_cell_runs(results_file("sweep_cells", args.sweep), list(planned), stage)


if __name__ == "__main__":
    stage_main(main)
