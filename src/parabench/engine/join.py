"""Join node 0's multi-node run from another node: `python -m parabench.engine.join WORKLOAD --node-rank K`.

Run it on each node but node 0 (K = 1 to hardware.nodes - 1), in that node's copy of the project: the same code,
params.yaml and prepared data (a shared filesystem, or `dvc repro prepare@<dataset>` there). It plans the run from
the local params.yaml exactly as node 0's stage does, and starts this node's torchrun agent; the workers check
that every node planned the same run on the same data before training. Node 0 writes every output.
"""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.launch import train
from parabench.engine.plan import make_plan
from parabench.errors import ConfigError
from parabench.paths import ROLES
from parabench.workloads import WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--role", choices=ROLES, default="train")
    parser.add_argument("--node-rank", type=int, required=True, help="this node's rank, 1 to hardware.nodes - 1")
    args = parser.parse_args()
    plan = make_plan(load_params(), args.workload, args.role)
    nodes = plan.machine.nodes
    if nodes == 1 or not plan.distributed:
        raise ConfigError(f"params.yaml: {args.role}@{args.workload} runs on one node here (hardware.nodes: {nodes}, "
                          f"strategy {plan.strategy_name}); there is nothing to join. Set hardware.nodes as node 0 "
                          "has it, with a strategy that runs under torchrun.")
    if not 1 <= args.node_rank < nodes:
        raise ConfigError(f"--node-rank {args.node_rank}: the other nodes are numbered 1 to {nodes - 1} "
                          f"(hardware.nodes: {nodes}; node 0 runs dvc repro).")
    train(plan, node_rank=args.node_rank)


if __name__ == "__main__":
    stage_main(main)
