"""Stage speedup@<workload>: the benchmark's cells summarised (noise floor, ranking, figure, metrics), then the run
against its reference, in a few numbers, with the robust interleaved ratio."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.cells import read_cell_runs
from parabench.io import read_model, write_json
from parabench.paths import ROLES, results_file, speedup_metrics_file
from parabench.records import Evaluation, RunRecord
from parabench.report.benchmark import write_benchmark
from parabench.report.speedup import compare, details
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    workload, params = WORKLOADS[args.workload], load_params()
    choices = workload.choices_beside_metrics(params.settings(args.workload))
    measured = read_cell_runs(results_file("benchmark_cells", args.workload))
    benchmark = write_benchmark(args.workload, measured, choices, params.smallest_difference)
    run, reference = (read_model(results_file(role, args.workload), RunRecord) for role in ROLES)
    evaluation = read_model(results_file("eval", args.workload), Evaluation)
    write_json(
        speedup_metrics_file(args.workload), compare(run, reference, evaluation, benchmark, workload.primary_metric)
    )
    write_json(
        results_file("speedup", args.workload), details(run, reference, evaluation, benchmark).model_dump(mode="json")
    )


if __name__ == "__main__":
    stage_main(main)
