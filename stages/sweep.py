"""Stage sweep@<name>: one params key over its values (once per curve) beside single and model_parallel."""

import argparse

from parabench.cli import stage_main
from parabench.config import PARAMS_FILE, load_params, read_raw_params
from parabench.engine.cells import plan_sweep, run_cells
from parabench.errors import ConfigError
from parabench.report.benchmark import summarize_cells
from parabench.report.sweep import write_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sweep")
    args = parser.parse_args()
    params, raw = load_params(), read_raw_params()
    if args.sweep not in params.sweeps:
        raise ConfigError(f"{PARAMS_FILE}: sweeps has no entry {args.sweep!r}; the sweeps are: "
                          f"{', '.join(params.sweeps) or 'none'}.")
    sweep = params.sweeps[args.sweep]
    points, planned = zip(*plan_sweep(raw, sweep, params.scale))
    stage = run_cells(list(planned), sweep, f"sweep@{args.sweep}")
    by_label = summarize_cells(list(planned))["cells"]
    write_sweep(args.sweep, sweep, params.scale, list(points), [by_label[entry.cell.label] for entry in planned],
                stage)


if __name__ == "__main__":
    stage_main(main)
