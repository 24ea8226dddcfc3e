"""What the data-parallel strategies share: one process per device, launched by torchrun, each a replica."""

from collections.abc import Callable

import torch
from torch import nn

from parabench.errors import StrategyUnavailable
from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, Strategy, StrategySetup


def check_gpus(name: str, setup: StrategySetup) -> None:
    """A one-process-per-GPU strategy needs as many GPUs on this node as hardware.devices says."""
    machine = setup.machine
    if machine.accelerator == "cuda" and machine.devices > torch.cuda.device_count():
        raise StrategyUnavailable(
            f"strategy '{name}' wants hardware.devices={machine.devices} GPUs per node, "
            f"but this node has {torch.cuda.device_count()}; lower hardware.devices or set it to auto."
        )


def replica_per_device(
    name: str, summary: str, apply: Callable[[nn.Module, Process, StrategySetup], Parallelized]
) -> Strategy:
    """A data-parallel strategy with one replica process per device (hardware.devices per node)."""
    return Strategy(
        name=name,
        summary=summary,
        apply=apply,
        distributed=lambda setup: True,
        processes_per_node=lambda setup: setup.machine.devices,
        data_parallel=True,
        check=lambda setup, global_batch: check_gpus(name, setup),
    )
