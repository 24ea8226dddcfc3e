"""Join node 0's multi-node run from another node: `python -m parabench.engine.join WORKLOAD --node-rank K`.

Run it on each node but node 0 (K = 1 to hardware.nodes - 1), in that node's copy of the project: the same code,
params.yaml and prepared data (a shared filesystem, or `dvc repro prepare@<dataset>` there). It plans the run from
the local params.yaml exactly as node 0's stage does, and starts this node's torchrun agent; the workers check
that every node planned the same run on the same data before training. Node 0 writes every output.
"""

import argparse

from parabench.cli import stage_main
from parabench.engine.launch import join
from parabench.paths import ROLES
from parabench.workloads import WORKLOADS


def main() -> None:
    """Parse the node's arguments and join."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--role", choices=ROLES, default="train")
    parser.add_argument("--node-rank", type=int, required=True, help="this node's rank, 1 to hardware.nodes - 1")
    args = parser.parse_args()
    join(args.workload, args.role, args.node_rank)


if __name__ == "__main__":
    stage_main(main)
