"""Stage sweep_summary@<name>: a sweep's cells as sweep@<name> timed them, drawn as curves (tables, metrics, figure)."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.cells import read_cell_runs, sweep_cells, timed_scale
from parabench.errors import ConfigError
from parabench.io import read_json
from parabench.paths import PROBE_FILE, results_file
from parabench.prediction.links import measured_links
from parabench.records import probe_record
from parabench.report.benchmark import summarize_cells
from parabench.report.sweep import write_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sweep")
    args = parser.parse_args()
    params = load_params()
    sweep = params.sweep(args.sweep)
    timed = results_file("sweep_cells", args.sweep)
    measured = read_cell_runs(timed)
    scale = timed_scale(measured.cells) or params.scale  # as they were timed
    points, cells = zip(*sweep_cells(sweep, scale))
    if [cell.label for cell in cells] != [entry.cell.label for entry in measured.cells]:
        raise ConfigError(
            f"{timed} holds other cells than sweeps.{args.sweep} in params.yaml: run "
            f"`dvc repro sweep_summary@{args.sweep}`, which times them again first."
        )
    figures = summarize_cells(measured.cells).cells
    write_sweep(
        args.sweep,
        sweep,
        scale,
        list(points),
        [figures[cell.label] for cell in cells],
        measured.stage,
        measured.environment,
        measured_links(probe_record(read_json(PROBE_FILE))),
    )


if __name__ == "__main__":
    stage_main(main)
