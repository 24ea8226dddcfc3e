"""Stage download@<dataset>: fetch and verify the raw files (mirror first, then the official URLs)."""

import argparse

from parabench.cli import stage_main
from parabench.config import load_params
from parabench.data.deadline import download_deadline
from parabench.data.registry import DATASETS
from parabench.paths import raw_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dataset", choices=sorted(DATASETS))
    args = parser.parse_args()
    params = load_params()
    with download_deadline(params.data.timeout_s):
        DATASETS[args.dataset].download(raw_dir(args.dataset), params.data_source(args.dataset))


if __name__ == "__main__":
    stage_main(main)
