"""Stage prepare@<dataset>: decode the raw files once into compact arrays."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.data.registry import DATASETS
from parabench.paths import prepared_dir, raw_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", choices=sorted(DATASETS))
    args = parser.parse_args()
    load_params()  # stage check planned every run; this stage only needs the file to be valid
    DATASETS[args.dataset].prepare(raw_dir(args.dataset), prepared_dir(args.dataset))


if __name__ == "__main__":
    stage_main(main)
