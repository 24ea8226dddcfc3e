"""What the data-parallel strategies share: one process per device, launched by torchrun, each a replica."""

from collections.abc import Callable

from torch import nn

from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, Strategy, StrategySetup


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
    )
