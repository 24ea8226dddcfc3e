"""Stage environment: the machine's identity (CPU model and vector ISA, cores, GPUs, torch); timing stages use it.

It runs at every `dvc repro` (always_changed); when its output is unchanged the timing stages are not re-run,
and on another machine (or after a torch upgrade) they are, so every timing shown was measured here.
"""

from parabench.cli import stage_main
from parabench.io import write_json
from parabench.paths import ENVIRONMENT_FILE
from parabench.runtime.environment import machine_identity


def main() -> None:
    write_json(ENVIRONMENT_FILE, machine_identity())


if __name__ == "__main__":
    stage_main(main)
