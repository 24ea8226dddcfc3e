"""How many stages a cut model has and which device each uses: one GPU per stage on CUDA, virtual devices on the CPU."""

from collections.abc import Sequence

import torch

from parabench.errors import ConfigError
from parabench.strategies.base import StrategySetup


def stage_count(setup: StrategySetup, nodes: int = 1) -> int:
    """partition.stages, or for `auto` one stage per device of `nodes` nodes, at most one per block, and the same
    number on every node (a whole number of blocks per node): 6 blocks on 8 GPUs make 6 stages, not none."""
    if setup.partition.stages != "auto":
        return setup.partition.stages
    return min(setup.machine.devices, setup.blocks // nodes) * nodes


def stage_devices(setup: StrategySetup) -> list[torch.device]:
    """cuda:0 .. cuda:n-1 for n stages on CUDA; n times the CPU otherwise."""
    stages = stage_count(setup)
    if setup.machine.accelerator == "cuda":
        return [torch.device("cuda", index) for index in range(stages)]
    return [torch.device("cpu")] * stages


def devices_virtual(setup: StrategySetup) -> bool:
    """On the CPU every stage shares the one CPU: the stages are real, the devices are not."""
    return setup.machine.accelerator != "cuda"


def check_stages(name: str, setup: StrategySetup, nodes: int = 1) -> None:
    """A cut model over `nodes` nodes needs at least two stages, no more than blocks or devices, as many on every
    node, and the documented cut when partition.balance asks for it."""
    stages, devices = stage_count(setup, nodes), setup.machine.devices * nodes
    where = f"{devices} device(s)" + (f" ({setup.machine.devices} per node on {nodes} nodes)" if nodes > 1 else "")
    if stages < 2:
        fix = (
            "set hardware.devices to 2 or more (auto gives 2 on the CPU)"
            if setup.machine.accelerator == "cpu"
            else "run it on a node with 2 GPUs or more (or with hardware.accelerator: cpu, over 2 CPU processes)"
        )
        raise ConfigError(
            f"{name} needs at least 2 devices (hardware.devices), one per stage, but this run makes {stages} stage(s) "
            f"of a {setup.blocks}-block model on {where}; {fix}, or pick strategy single."
        )
    if stages > setup.blocks:
        raise ConfigError(
            f"{name} cannot cut the model into {stages} stages (partition.stages): the model has only {setup.blocks} "
            f"blocks; set partition.stages to at most {setup.blocks}, or auto."
        )
    if stages > devices:
        raise ConfigError(
            f"{name} cannot place partition.stages: {stages} stages on {where}, one stage per device; set "
            f"partition.stages to at most {devices}, or auto."
        )
    if stages % nodes:
        raise ConfigError(
            f"{name} runs the same number of stages on each of its {nodes} nodes, but partition.stages is {stages}; "
            f"set it to a multiple of {nodes}, or auto."
        )
    if setup.partition.balance == "documented":
        check_documented_cut(setup.documented_cut, stages)


def check_documented_cut(documented: Sequence[int] | None, stages: int) -> None:
    """partition.balance `documented` needs the workload's documented cut, into as many stages as the run has."""
    if documented is None:
        raise ConfigError(
            "partition.balance: 'documented' cuts the model where its source document does, but this workload's "
            "document gives no cut; set partition.balance to time or parameters."
        )
    if len(documented) != stages:
        raise ConfigError(
            f"partition.balance: 'documented' is the source document's cut {list(documented)} ({len(documented)} "
            "stages), "
            f"but this run cuts the model into {stages} stages; set partition.stages to {len(documented)} (with at "
            "least as many devices), or partition.balance to time or parameters."
        )
