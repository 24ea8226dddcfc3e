"""Benchmark: `ddp` with 2 processes x 1 thread against `single` with 1 process x 1 thread, per batch size.

    python benchmarks/scaling.py [--batches 32 64 128] [--width 16] [--rounds 3] [--steps 20]

Weak scaling: each ddp rank computes `batch` samples per step, as `single` does, so the scaling efficiency
is ddp samples/s / (2 x single samples/s). Both run through the benchmark stage's own machinery (fresh
worker processes, warm-up excluded, interleaved rounds), on the prepared Fashion-MNIST data.
"""

import argparse
import tempfile
from pathlib import Path

import yaml

from parabench.config import PARAMS_FILE, load_params
from parabench.engine.benchmark import run_benchmark
from parabench.report.benchmark import summarize_benchmark


def params_for(batch: int, width: int, rounds: int, steps: int) -> dict:
    """params.yaml, changed to 1 thread per process, 2 devices, weak scaling at `batch` per process."""
    params = yaml.safe_load(PARAMS_FILE.read_text())
    params["hardware"].update(accelerator="cpu", devices=2, threads=1)
    params["benchmark"].update(strategies=["single", "ddp"], rounds=rounds, warmup_steps=3, timed_steps=steps)
    params["scales"]["fashion_mnist"][params["scale"]].update(batch_size=batch, width=width, scaling="weak")
    return params


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print("batch/rank  single 1x1 samples/s  ddp 2x1 samples/s  (slowest-fastest round)  efficiency")
    for batch in args.batches:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "params.yaml"
            path.write_text(yaml.safe_dump(params_for(batch, args.width, args.rounds, args.steps)))
            results = summarize_benchmark(run_benchmark(load_params(path), path))["fashion_mnist"]
        single, ddp = results["single"], results["ddp"]
        print(f"{batch:10d}  {single['samples_per_s']:20.1f}  {ddp['samples_per_s']:17.1f}  "
              f"({ddp['samples_per_s_min']:.0f}-{ddp['samples_per_s_max']:.0f})  {ddp['scaling_efficiency']:10.3f}")


if __name__ == "__main__":
    main()
