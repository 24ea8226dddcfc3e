"""Stage evaluate@<workload>: the workload's test scores of the trained and the reference model."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.evaluation import evaluate_models
from parabench.io import write_json
from parabench.paths import results_file
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    args = parser.parse_args()
    write_json(
        results_file("eval", args.workload), evaluate_models(load_params(), args.workload).model_dump(mode="json")
    )


if __name__ == "__main__":
    stage_main(main)
