"""Back-test: parabench's prediction (src/parabench/prediction.py) against published scaling tables.

    python benchmarks/backtest.py [benchmarks/published_scaling.yaml]

Each setup of the file (its header documents the format; every setup cites its source) is predicted from what a
user would know before buying: one device's published throughput, the model's size, the device count and the links
(prediction.py's presets, bandwidth from the vendors' specifications). Nothing is fitted to the published result.
Data-parallel setups: a device computes its batch at the single-device rate; the ring all-reduce of every gradient
crosses the network beyond `devices_per_node` devices (a flat ring: each node's link carries one ring edge), hidden
behind the backward pass but for the last fused buffer (ddp). Pipeline setups: the schedule's bound, (m + S - 1)
equal stage times for equal stages, where a published `balance` gives each stage its layers' cost on the device's
roofline (benchmarks/roofline.py), plus the published cost of cutting the model; where the source checkpoints
micro-batches (torchgpipe's default, `except_last`), each checkpointed micro-batch runs its forward again in
backward (a third of its compute). A one-device pipeline is predicted like the others (one stage). Prints published,
predicted and the error per setup, and whether it meets the goal: within 10 points of an efficiency, within 10% of a
speedup.
"""

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from roofline import stage_costs, torchgpipe_resnet101_layers

from parabench.prediction.collectives import PRESETS, Links
from parabench.strategies.cost import data_parallel_step, pipeline_step

SETUPS = Path(__file__).with_name("published_scaling.yaml")
BACKWARD_SHARE = 2 / 3  # of a step's compute: the backward pass does about twice the forward's work
GOAL_POINTS, GOAL_RELATIVE = 0.10, 0.10


@dataclass(frozen=True)
class Outcome:
    """One setup: what was published, what is predicted, the error and whether it meets the goal."""

    name: str
    figure: str  # "efficiency" or "speedup"
    published: float
    predicted: float

    @property
    def error(self) -> float:
        """Points of efficiency, or the relative error of a speedup."""
        if self.figure == "efficiency":
            return self.predicted - self.published
        return self.predicted / self.published - 1

    @property
    def meets_goal(self) -> bool:
        """Within 10 points of an efficiency, or 10% of a speedup."""
        return abs(self.error) <= (GOAL_POINTS if self.figure == "efficiency" else GOAL_RELATIVE)


def data_parallel(setup: dict[str, Any]) -> Outcome:
    """The published efficiency against the predicted one (module docstring)."""
    devices = setup["devices"]
    compute = setup["batch_per_device"] / setup["single_device_samples_per_s"]
    link_name = setup["network"] if devices > setup["devices_per_node"] else setup["interconnect"]
    gradients, fusion = 4 * setup["parameters"], setup["bucket_bytes"]
    full, rest = divmod(gradients, fusion)
    step = data_parallel_step(
        compute,
        BACKWARD_SHARE * compute,
        ([rest] if rest else []) + [fusion] * full,  # the last fused buffer full, as the module docstring says
        Links.alike(PRESETS[link_name].link),
        devices,
        hideable=1.0 if setup["strategy"] == "ddp" else 0.0,
    )
    return Outcome(setup["name"], "efficiency", setup["published_efficiency"], compute / step.step_s)


def recomputed(micro_batches: int, checkpointing: str) -> float:
    """A step's compute with checkpointing over the same without: each checkpointed micro-batch runs its forward again
    (`never`: none; `except_last`: all but the last; `always`: all)."""
    again = {"never": 0, "except_last": micro_batches - 1, "always": micro_batches}[checkpointing]
    return 1 + (1 - BACKWARD_SHARE) * again / micro_batches


def relative_stage_costs(setup: dict[str, Any]) -> list[float]:
    """The setup's `stage_costs`, or those of its published `balance` of ResNet-101 on its `device`'s roofline."""
    if "stage_costs" in setup:
        return list(setup["stage_costs"])
    device = setup["device"]
    return stage_costs(
        torchgpipe_resnet101_layers(), setup["balance"], device["peak_flops"], device["memory_bandwidth"]
    )


def pipelined(setup: dict[str, Any]) -> Outcome:
    """The published speedup against the predicted one (module docstring)."""
    single, micro_batches, costs = setup["single_device_step_s"], setup["micro_batches"], relative_stage_costs(setup)
    stage_seconds = [single * cost / sum(costs) / micro_batches for cost in costs]
    checkpointing = setup.get("checkpointing", "never")
    step = pipeline_step(stage_seconds, micro_batches).step_s * recomputed(micro_batches, checkpointing)
    return Outcome(setup["name"], "speedup", setup["published_speedup"], single / (step + setup["overhead_s"]))


def backtest(path: Path) -> list[Outcome]:
    """Every setup of the file, predicted."""
    setups = yaml.safe_load(path.read_text())["setups"]
    return [pipelined(setup) if setup["strategy"] == "pipeline" else data_parallel(setup) for setup in setups]


def main() -> None:
    """Print the table; exit 1 when a prediction misses its goal."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("setups", nargs="?", type=Path, default=SETUPS)
    outcomes = backtest(parser.parse_args().setups)
    print(f"{'setup':45s} {'figure':10s} {'published':>9s} {'predicted':>9s} {'error':>7s}  goal")
    for outcome in outcomes:
        error = f"{outcome.error:+.1%}" if outcome.figure == "speedup" else f"{100 * outcome.error:+.1f}pt"
        print(
            f"{outcome.name:45s} {outcome.figure:10s} {outcome.published:9.3f} {outcome.predicted:9.3f} {error:>7s}  "
            f"{'met' if outcome.meets_goal else 'MISSED'}"
        )
    sys.exit(0 if all(outcome.meets_goal for outcome in outcomes) else 1)


if __name__ == "__main__":
    main()
