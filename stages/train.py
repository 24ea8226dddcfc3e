"""Stage train@<workload> and reference@<workload>: train with `strategy` or `reference.strategy`."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.launch import train
from parabench.engine.plan import make_plan
from parabench.paths import ROLES
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--role", choices=ROLES, default="train")
    args = parser.parse_args()
    train(make_plan(load_params(), args.workload, args.role))


if __name__ == "__main__":
    stage_main(main)
