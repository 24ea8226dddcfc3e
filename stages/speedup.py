"""Stage speedup@<workload>: speedup and scaling efficiency of the run against the reference run."""

import argparse

from parabench.cli import stage_main
from parabench.io import read_json, write_json
from parabench.paths import eval_metrics_file, speedup_metrics_file, train_metrics_file
from parabench.report.speedup import compare
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    result = compare(
        read_json(train_metrics_file("train", args.workload)),
        read_json(train_metrics_file("reference", args.workload)),
        read_json(eval_metrics_file(args.workload)),
    )
    write_json(speedup_metrics_file(args.workload), result)


if __name__ == "__main__":
    stage_main(main)
