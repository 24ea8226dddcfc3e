"""Which device each stage of a cut model uses: one GPU per stage on CUDA, virtual devices on the CPU."""

import torch

from parabench.errors import ConfigError
from parabench.strategies.base import StrategySetup
from parabench.strategies.partition import check_documented_cut
from parabench.strategies.per_device import check_gpus


def stage_devices(setup: StrategySetup) -> list[torch.device]:
    """cuda:0 .. cuda:n-1 for n = hardware.devices on CUDA; n times the CPU otherwise."""
    stages = setup.machine.devices
    if setup.machine.accelerator == "cuda":
        return [torch.device("cuda", index) for index in range(stages)]
    return [torch.device("cpu")] * stages


def devices_virtual(setup: StrategySetup) -> bool:
    """On the CPU every stage shares the one CPU: the stages are real, the devices are not."""
    return setup.machine.accelerator != "cuda"


def check_stage_devices(name: str, setup: StrategySetup) -> None:
    """A cut model needs at least two stages, no more stages than blocks, the seed's cut when it asks for it, and
    on CUDA one GPU for each."""
    if setup.machine.devices < 2:
        raise ConfigError(
            f"{name} needs at least 2 devices (hardware.devices), one per stage, but hardware.devices is "
            f"{setup.machine.devices}; set hardware.devices to 2 or more (auto gives 2 on the CPU), or pick "
            "strategy single."
        )
    if setup.machine.devices > setup.blocks:
        raise ConfigError(
            f"{name} cannot cut the model into {setup.machine.devices} stages: the model has {setup.blocks} blocks "
            f"but hardware.devices asks for {setup.machine.devices} stages; lower hardware.devices to at most "
            f"{setup.blocks}."
        )
    if setup.partition.balance == "seed":
        check_documented_cut(setup.documented_cut, setup.machine.devices, setup.blocks)
    check_gpus(name, setup)
