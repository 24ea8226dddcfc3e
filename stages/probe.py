"""Stage probe: the collectives timed over this node's devices, and between the nodes (one rank on each, the others
joining), and a latency and bandwidth fitted to each."""

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.probe import probe_links, probe_network
from parabench.paths import PROBE_FILE, PROBE_NETWORK_FILE
from parabench.runtime.hardware import resolve


def main() -> None:
    params = load_params()
    machine = resolve(params.hardware)
    probe_links(machine, params.predict.probe_max_bytes, PROBE_FILE)
    probe_network(machine, params.predict.probe_max_bytes, PROBE_NETWORK_FILE)


if __name__ == "__main__":
    stage_main(main)
