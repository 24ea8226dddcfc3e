"""Stage probe: the collectives timed over this node's devices, and a latency and bandwidth fitted to each."""

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.engine.probe import probe_links
from parabench.paths import PROBE_FILE
from parabench.runtime.hardware import resolve


def main() -> None:
    params = load_params()
    probe_links(resolve(params.hardware), params.predict.probe_max_bytes, PROBE_FILE)


if __name__ == "__main__":
    stage_main(main)
