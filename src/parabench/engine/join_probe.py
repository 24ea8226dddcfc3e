"""Join node 0's probe between the nodes (stage probe) from another node: `python -m parabench.engine.join_probe
--node-rank K`, in that node's copy of the project (the same params.yaml), while node 0's probe stage waits."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.probe import probe_network
from parabench.errors import ConfigError
from parabench.paths import PROBE_NETWORK_FILE
from parabench.runtime.hardware import resolve
from parabench.runtime.torchrun import check_node_rank


def join_probe(node_rank: int) -> None:
    """Join node 0's probe between the nodes from node `node_rank`, with the local params.yaml's hardware."""
    params = load_params()
    machine = resolve(params.hardware)
    if machine.nodes == 1:
        raise ConfigError(
            "params.yaml: hardware.nodes is 1 here, so the probe stage times no network; there is nothing to join. "
            "Set hardware.nodes as node 0 has it."
        )
    check_node_rank(node_rank, machine.nodes)
    probe_network(machine, params.predict.probe_max_bytes, PROBE_NETWORK_FILE, node_rank)


def main() -> None:
    """Parse the node's rank and join."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--node-rank", type=int, required=True, help="this node's rank, 1 to hardware.nodes - 1")
    join_probe(parser.parse_args().node_rank)


if __name__ == "__main__":
    stage_main(main)
