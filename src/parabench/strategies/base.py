"""What a strategy is: a function applied to a plain model, returning what the one training loop needs."""

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from parabench.engine.distributed import Process
from parabench.engine.hardware import Machine


@dataclass(frozen=True)
class Parallelized:
    """A model made ready by a strategy: what to call, what to save, how each global batch is shared."""

    module: nn.Module
    plain: nn.Module
    shard_index: int
    shard_count: int


@dataclass(frozen=True)
class Strategy:
    """One way to train in parallel, with what it needs from the hardware."""

    name: str
    summary: str
    launcher: str
    processes_per_node: Callable[[Machine], int]
    check: Callable[[Machine], None]
    apply: Callable[[nn.Module, Process], Parallelized]

    def processes(self, machine: Machine) -> int:
        """Processes in the whole job."""
        return self.processes_per_node(machine) * (machine.nodes if self.launcher == "torchrun" else 1)

    def data_replicas(self, machine: Machine) -> int:
        """How many model replicas share each global batch."""
        return self.processes(machine)
