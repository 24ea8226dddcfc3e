"""What a strategy is: a function applied to a plain model, returning what the one training loop needs."""

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from parabench.engine.distributed import Process
from parabench.engine.hardware import Machine

LossFn = Callable[[Tensor, Tensor], Tensor]
StepResult = tuple[Tensor | None, Tensor | None]
TrainStep = Callable[[Tensor, Tensor, LossFn], StepResult]


def forward_backward(module: nn.Module) -> TrainStep:
    """The usual step: forward the whole input, loss against labels on the output's device, backward."""

    def step(inputs: Tensor, labels: Tensor, loss_fn: LossFn) -> StepResult:
        outputs = module(inputs)
        loss = loss_fn(outputs, labels.to(outputs.device, non_blocking=True))
        loss.backward()
        return loss.detach(), outputs.detach()

    return step


@dataclass(frozen=True)
class Parallelized:
    """A model made ready by a strategy: what to optimise, how to step, how each global batch is shared.

    train_step(inputs, labels, loss) runs forward and backward for this process's part and returns the
    mean loss and the outputs where this process has them (None where it does not, e.g. an early pipeline
    stage). full_state_dict() returns the whole model's state on rank 0 (a collective: call it on every rank).
    """

    module: nn.Module
    input_device: torch.device
    shard_index: int
    shard_count: int
    train_step: TrainStep
    full_state_dict: Callable[[], dict[str, Tensor]]


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
