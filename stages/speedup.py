"""Stage speedup@<workload>: the run against its reference, in a few numbers, with the robust interleaved ratio."""

import argparse

from parabench.cli import stage_main
from parabench.io import read_json, write_json
from parabench.paths import results_file, speedup_metrics_file
from parabench.report.speedup import compare, details
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    run, reference = (read_json(results_file(role, args.workload)) for role in ("train", "reference"))
    evaluation = read_json(results_file("eval", args.workload))
    benchmark = read_json(results_file("benchmark", args.workload))
    primary = WORKLOADS[args.workload].primary_metric
    write_json(speedup_metrics_file(args.workload), compare(run, reference, evaluation, benchmark, primary))
    write_json(results_file("speedup", args.workload), details(run, reference, evaluation, benchmark))


if __name__ == "__main__":
    stage_main(main)
