"""What a strategy is: a function applied to a plain model, returning what the one training loop needs."""

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from pydantic import BaseModel, ConfigDict
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.runtime.hardware import Machine
from parabench.runtime.process import Process
from parabench.strategies.cost import ReplicaCost, StagedCost
from parabench.strategies.details import Details
from parabench.strategies.options import FsdpOptions, PartitionOptions, PipelineOptions, Precision
from parabench.strategies.precision import autocast

LossFn = Callable[[Tensor, Tensor], Tensor]


class StepResult(NamedTuple):
    """The mean loss and the outputs of this process's part of a step (None where it has none, e.g. an early
    pipeline stage)."""

    loss: Tensor | None
    outputs: Tensor | None


TrainStep = Callable[[Batch, LossFn], StepResult]
ParamGroups = list[dict[str, Any]]  # torch.optim's parameter groups: {"params": [...], "lr": ...}
OptimizerBuilder = Callable[[ParamGroups], torch.optim.Optimizer]  # the workload's optimiser over given groups


def whole_optimizer(build: OptimizerBuilder, groups: ParamGroups) -> torch.optim.Optimizer:
    """The workload's optimiser over every parameter this process holds."""
    return build(groups)


class StrategySetup(BaseModel):
    """What a strategy may read besides the model: the machine, the strategies' params.yaml sections,
    how many ordered blocks the model has, the shape of one step's batch (to time blocks on), where the
    workload's source document cuts the model, if it does (partition.balance `documented`), and the precision its
    forward computes in."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    machine: Machine
    partition: PartitionOptions
    pipeline: PipelineOptions
    fsdp: FsdpOptions = FsdpOptions()
    blocks: int
    batch_shape: tuple[int, ...]
    documented_cut: tuple[int, ...] | None = None
    precision: Precision = "32"


def forward_backward(module: nn.Module, precision: Precision) -> TrainStep:
    """The usual step: forward the whole input and the loss against the targets on the output's device (autocast to
    `precision`), then backward."""

    def step(batch: Batch, loss_fn: LossFn) -> StepResult:
        with autocast(precision, batch.inputs.device):
            outputs = module(batch.inputs)
            loss = loss_fn(outputs, batch.targets.to(outputs.device, non_blocking=True))
        loss.backward()
        return StepResult(loss.detach(), outputs.detach())

    return step


@dataclass(frozen=True)
class Parallelized:
    """A model made ready by a strategy: what to optimise, how to step, how each global batch is shared.

    module is what runs (a wrapper such as DDP, or the model itself); model is the plain model, or this
    process's stage of it, under the plain model's parameter names. devices are every device this process computes
    on (the step clock waits for each; memory is recorded per device). train_step(batch, loss) runs forward and
    backward for this process's part and returns the mean loss and the outputs where this process has them.
    full_state_dict() returns the whole model's state on rank 0 (a collective: call it on every rank).
    details holds what the metrics should record about the strategy's choices (e.g. the cut). reads_inputs is false
    where the process never looks at the inputs (a pipeline stage after the first): its batches are not transformed.
    no_sync() is the context in which a step's backward keeps its gradients local (gradient accumulation: every
    micro-step but the last); nothing to do for a strategy that does not communicate them.
    make_optimizer(build, groups) is the optimiser the loop steps: the workload's (`build`) over the parameter groups,
    or a strategy's around it (ZeRO shards its state over the processes).
    """

    module: nn.Module
    model: nn.Module
    input_device: torch.device
    devices: tuple[torch.device, ...]
    shard_index: int
    shard_count: int
    train_step: TrainStep
    full_state_dict: Callable[[], dict[str, Tensor]]
    details: Details = field(default_factory=Details)
    reads_inputs: bool = True
    no_sync: Callable[[], AbstractContextManager[object]] = nullcontext
    make_optimizer: Callable[[OptimizerBuilder, ParamGroups], torch.optim.Optimizer] = whole_optimizer

    def named_parameters(self) -> Iterator[tuple[str, nn.Parameter]]:
        """This process's parameters under the plain model's names, whatever wraps them."""
        return self.model.named_parameters()


def _runs_anywhere(setup: StrategySetup, global_batch: int) -> None:
    """No requirement beyond what params.yaml already guarantees."""


@dataclass(frozen=True)
class Strategy:
    """One way to train in parallel, with what it needs from the hardware.

    processes_per_node: worker processes on each node; torchrun launches them when `distributed` is true.
    devices_per_node: devices the strategy uses on each node (default: one per process).
    data_parallel: each device holds a replica that computes its share of every global batch (weak scaling
    multiplies the batch by their number; strong scaling needs the batch to divide among them).
    check(setup, global_batch): raise StrategyUnavailable or ConfigError before any heavy work.
    accumulates: whether its step can be cut into micro-steps for gradient accumulation (params.yaml `accumulate`).
    overflow_seen_by_all(setup): whether fp16's loss scaler on every process sees a gradient overflow on any
    (params.yaml `precision: 16-mixed`), so that all skip that step alike: each process holds whole gradients
    (replicas summed by an all-reduce, which spreads an inf to all), or FSDP2's DTensor shards, whose overflow check
    torch reduces over the mesh. Where not, the training loop's scaler all-reduces the check itself.
    options: the strategies' params.yaml sections this one reads (`partition`, `pipeline`, `fsdp`); they are part of
    its runs' identity, so a run whose strategy ignores them keeps its checkpoint when they change.
    baseline: the reference every speedup is taken against (one process on one device), and the A/A control's run.
    reference_line: a line a sweep's curves are read against (the baseline, and the cut model with no micro-batches).
    headline: the strategy `dvc exp show` and the summary quote the prediction of (its efficiency at the most devices).
    all_reduces_gradients: its communication is one all-reduce of every gradient, so the time split can say how much
    of that all-reduce the backward pass hid.
    refuses_compile: why `compile: true` does not compose with it, where it does not.
    cost: its cost model for the prediction (cost.py); None where nothing is predicted (the baseline).
    details_type: the type of what it records of itself (Parallelized.details).
    """

    name: str
    summary: str
    apply: Callable[[nn.Sequential, Process, StrategySetup], Parallelized]  # models are ordered blocks
    distributed: Callable[[StrategySetup], bool] = lambda setup: False
    processes_per_node: Callable[[StrategySetup], int] = lambda setup: 1
    data_parallel: bool = False
    check: Callable[[StrategySetup, int], None] = _runs_anywhere
    devices_per_node: Callable[[StrategySetup], int] | None = None
    accumulates: bool = True
    overflow_seen_by_all: Callable[[StrategySetup], bool] = lambda setup: True
    options: tuple[str, ...] = ()
    baseline: bool = False
    reference_line: bool = False
    headline: bool = False
    all_reduces_gradients: bool = False
    refuses_compile: str | None = None
    cost: ReplicaCost | StagedCost | None = None
    details_type: type[Details] = Details

    def details_of(self, recorded: Mapping[str, Any]) -> Details:
        """Its record of itself as a run wrote it (`strategy_details`), read back into its own type."""
        return self.details_type.model_validate(dict(recorded))

    def processes(self, setup: StrategySetup) -> int:
        """Processes in the whole job."""
        return self.processes_per_node(setup) * (setup.machine.nodes if self.distributed(setup) else 1)

    def devices(self, setup: StrategySetup) -> int:
        """Devices in the whole job: what scaling efficiency divides by."""
        per_node = (self.devices_per_node or self.processes_per_node)(setup)
        return per_node * (setup.machine.nodes if self.distributed(setup) else 1)

    def data_replicas(self, setup: StrategySetup) -> int:
        """How many model replicas share each global batch."""
        return self.devices(setup) if self.data_parallel else 1
