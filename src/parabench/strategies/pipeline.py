"""`pipeline`: model parallel stages fed micro-batches (the workload's pipeline.split_size), in one process or one per
stage.

engine inprocess: the tutorial's pipelining; one process drives every stage, and while micro-batch i runs
on stage k, micro-batch i+1 runs on stage k-1 (on CUDA the devices overlap through asynchronous kernels).
engine distributed: one process per stage under torchrun, torch.distributed.pipelining's GPipe or 1F1B
schedule sending activations and gradients between them.
BatchNorm normalises each micro-batch with its own statistics: in training mode this is not the
computation of `single` on the whole batch (with frozen BatchNorm it is, up to float rounding).
"""

from dataclasses import replace
from math import ceil
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.errors import ConfigError
from parabench.runtime.collectives import broadcast_object, gather_objects
from parabench.runtime.process import Process
from parabench.strategies.base import LossFn, Parallelized, StepResult, Strategy, StrategySetup, TrainStep
from parabench.strategies.cost import StagedCost, pipeline_bound
from parabench.strategies.model_parallel import StagedModel, stage_cut, staged_parallel
from parabench.strategies.options import PipelineEngine, PipelineSchedule
from parabench.strategies.partition import CutDetails, cut
from parabench.strategies.precision import AutocastForward
from parabench.strategies.stage_devices import check_stages, devices_virtual, stage_count, stage_devices

if TYPE_CHECKING:  # torch.distributed.pipelining costs 0.7 s to import: only the distributed engine loads it
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import PipelineScheduleSingle
BATCHNORM = "statistics per micro-batch"
INPROCESS_ON_CPU = (
    "the in-process engine on the CPU: one process runs the stages in turn, so they cannot overlap; "
    "only the distributed engine (one process per stage) can"
)


class PipelineDetails(CutDetails):
    """What a pipeline run records of itself: its cut (CutDetails), its engine and schedule, its micro-batches' size
    and how BatchNorm normalises them."""

    engine: PipelineEngine = "inprocess"
    schedule: PipelineSchedule | None = None
    split_size: int | None = None
    batchnorm: str | None = None

    def stages_in_turn_on_one_cpu(self) -> bool:
        """One process on one CPU runs the stages in turn: the in-process engine on virtual devices."""
        return self.engine != "distributed" and self.devices_virtual

    def stage_parts(self) -> dict[str, float]:
        """Its schedule's bound over its stages' seconds: compute, imbalance and bubble (pipeline_bound)."""
        return pipeline_bound(self.stage_seconds, self.micro_batches or 1)

    def why_stages_wait(self) -> str | None:
        """The in-process engine on a CPU cannot overlap its stages."""
        return INPROCESS_ON_CPU if self.stages_in_turn_on_one_cpu() else None


class ContiguousGradient(torch.autograd.Function):
    """The identity, whose backward hands on its gradient contiguous."""

    @staticmethod
    def forward(ctx: Any, tensor: Tensor) -> Tensor:
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx: Any, gradient: Tensor) -> Tensor:
        return gradient.contiguous()


class ContiguousBetweenStages(nn.Module):
    """A stage whose output and input gradient, what it sends to the other stages, are contiguous.

    gloo and nccl send and receive only contiguous tensors, and torch.distributed.pipelining allocates each receive
    buffer with the strides the first micro-batch showed. Compiled blocks (compile: true) hand back a convolution's
    input gradient in channels-last strides, so the stage before would receive it into a buffer gloo refuses. On a
    contiguous tensor both are no-ops.
    """

    def __init__(self, stage: nn.Module):
        super().__init__()
        self.stage = stage

    def forward(self, inputs: Tensor) -> Tensor:
        """The stage's forward, with its input's gradient and its output made contiguous."""
        outputs: Tensor = self.stage(ContiguousGradient.apply(inputs))
        return outputs.contiguous()


class MicroBatchPipeline(StagedModel):
    """Staged model whose forward runs micro-batches through the stages in the tutorial's interleaved order."""

    def __init__(self, model: nn.Sequential, devices: list[torch.device], sizes: list[int], split_size: int):
        super().__init__(model, devices, sizes)
        self.split_size = split_size

    def forward(self, inputs: Tensor) -> Tensor:
        """At clock tick t, stage k runs micro-batch t-k, last stage first; the outputs are concatenated."""
        activations = list(inputs.split(self.split_size))
        stages = len(self.stages)
        for tick in range(len(activations) + stages - 1):
            for index in reversed(range(stages)):
                micro_batch = tick - index
                if 0 <= micro_batch < len(activations):
                    activations[micro_batch] = self.run_stage(index, activations[micro_batch])
        return torch.cat(activations)


def counting_micro_batches(step: TrainStep, split_size: int, details: PipelineDetails) -> TrainStep:
    """Record how many micro-batches each batch makes (the batch is known only when it arrives)."""

    def counted(batch: Batch, loss_fn: LossFn) -> StepResult:
        details.micro_batches = ceil(len(batch) / split_size)
        return step(batch, loss_fn)

    return counted


def apply_inprocess(model: nn.Sequential, setup: StrategySetup) -> Parallelized:
    """model_parallel's stages with a micro-batched forward; balance by time on the first micro-batch."""
    devices, split_size = stage_devices(setup), setup.pipeline.split_size
    chosen = stage_cut(model, setup, devices[0], split_size, len(devices))
    staged = MicroBatchPipeline(model, devices, chosen.sizes, split_size)
    details = PipelineDetails(engine="inprocess", split_size=split_size, **chosen.details(), batchnorm=BATCHNORM)
    parallel = staged_parallel(staged, setup, details=details)
    return replace(parallel, train_step=counting_micro_batches(parallel.train_step, split_size, details))


def scheduled_step(stage: "PipelineStage", schedule_name: str, split_size: int, details: PipelineDetails) -> TrainStep:
    """A train step through the schedule, built on the first batch (its size fixes the micro-batch count).

    Every rank receives the same global batch: the first stage feeds the inputs, the last computes one
    mean loss per micro-batch; the schedule divides the accumulated gradients by the micro-batch count
    (scale_grads), so they are those of the mean loss over the whole batch.
    """
    from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

    schedule_class = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[schedule_name]
    schedule: PipelineScheduleSingle | None = None

    def step(batch: Batch, loss_fn: LossFn) -> StepResult:
        nonlocal schedule
        if schedule is None:
            details.micro_batches = len(batch) // split_size
            # The last stage's outputs may be autocast ones: the loss in fp32, as under autocast elsewhere.
            schedule = schedule_class(stage, details.micro_batches, loss_fn=lambda out, y: loss_fn(out.float(), y))
        stage_inputs = (batch.inputs,) if stage.is_first else ()
        if not stage.is_last:
            schedule.step(*stage_inputs)
            return StepResult(None, None)
        losses: list[Tensor] = []
        outputs = schedule.step(*stage_inputs, target=batch.targets.to(stage.device), losses=losses)
        return StepResult(torch.stack(losses).mean().detach(), outputs.detach())

    return step


def gathered_state_dict(stage: nn.Sequential) -> dict[str, Tensor]:
    """Every rank's stage state (CPU copies, the whole model's keys), merged in stage order on every rank."""
    merged: dict[str, Tensor] = {}
    for part in gather_objects({name: value.detach().cpu() for name, value in stage.state_dict().items()}):
        merged.update(part)
    return merged


def apply_distributed(model: nn.Sequential, process: Process, setup: StrategySetup) -> Parallelized:
    """This rank builds its own stage (stage index = global rank, over every node) and steps the pipeline schedule
    with the others.

    Every rank receives the global batch; only the first stage reads the inputs, so only it moves and transforms
    them (the others keep the targets and the batch's size). Rank 0 times the blocks and every rank cuts the model
    as it measured.
    """
    stages = process.world_size
    chosen = broadcast_object(
        stage_cut(model, setup, process.device, setup.pipeline.split_size, stages) if process.is_main else None
    )
    assert chosen is not None, "rank 0 cut the model"
    submodule = cut(model, chosen.sizes)[process.rank].to(process.device)  # rank 0's cut: every rank cuts alike
    from torch.distributed.pipelining import PipelineStage

    # The schedule runs the stage's forward: autocast it there, so that the backward runs outside.
    stage = PipelineStage(
        ContiguousBetweenStages(AutocastForward(submodule, setup.precision, process.device)),
        process.rank,
        stages,
        process.device,
    )
    schedule_name, split_size = setup.pipeline.schedule, setup.pipeline.split_size
    details = PipelineDetails(
        engine="distributed",
        schedule=schedule_name,
        split_size=split_size,
        stages=len(chosen.sizes),
        **chosen.details(),
        devices_virtual=devices_virtual(setup),
        batchnorm=BATCHNORM,
    )
    return Parallelized(
        module=submodule,
        model=submodule,
        input_device=process.device if stage.is_first else torch.device("cpu"),
        devices=(process.device,),
        shard_index=0,
        shard_count=1,
        train_step=scheduled_step(stage, schedule_name, split_size, details),
        full_state_dict=lambda: gathered_state_dict(submodule),
        details=details,
        reads_inputs=stage.is_first,
    )


def apply(model: nn.Sequential, process: Process, setup: StrategySetup) -> Parallelized:
    """Build the engine that pipeline.engine names."""
    if setup.pipeline.engine == "distributed":
        return apply_distributed(model, process, setup)
    return apply_inprocess(model, setup)


def check(setup: StrategySetup, global_batch: int) -> None:
    """Stages need devices; the distributed schedules need equal micro-batches of the global batch (the machine's:
    under weak scaling it grows with the replicas), and 1F1B at least one per stage. That a micro-batch fits the
    batch at all is params.yaml's rule (config.Params)."""
    check_stages("pipeline", setup, spanned_nodes(setup))
    split_size, key = setup.pipeline.split_size, setup.pipeline.split_size_key
    stages = stage_count(setup, spanned_nodes(setup))
    if setup.pipeline.engine != "distributed":
        return
    if global_batch % split_size:
        divisor = max(d for d in range(1, split_size + 1) if global_batch % d == 0)
        raise ConfigError(
            f"{key}: {split_size} does not divide the global batch of {global_batch} units, but the distributed "
            f"engine's schedules need equal micro-batches; set {key} to a divisor of {global_batch} (e.g. "
            f"`dvc exp run -S {key}={divisor}`) or use pipeline.engine: inprocess."
        )
    if setup.pipeline.schedule == "1f1b" and global_batch // split_size < stages:
        raise ConfigError(
            f"pipeline.schedule: '1f1b' needs at least as many micro-batches as stages, but the global batch of "
            f"{global_batch} in micro-batches of {key}={split_size} makes {global_batch // split_size} for "
            f"{stages} stages; set {key} to at most {global_batch // stages} or pipeline.schedule to gpipe."
        )


def spanned_nodes(setup: StrategySetup) -> int:
    """The distributed engine runs its stages over every node (one process per stage); in-process, one node."""
    return setup.machine.nodes if setup.pipeline.engine == "distributed" else 1


def stages_per_node(setup: StrategySetup) -> int:
    """Stages (and devices) on each node the pipeline spans."""
    return stage_count(setup, spanned_nodes(setup)) // spanned_nodes(setup)


STRATEGY = Strategy(
    name="pipeline",
    summary="pipelining: model parallel stages fed micro-batches, in one process or one per stage (torchrun)",
    apply=apply,
    distributed=lambda setup: setup.pipeline.engine == "distributed",
    processes_per_node=lambda setup: stages_per_node(setup) if setup.pipeline.engine == "distributed" else 1,
    devices_per_node=stages_per_node,
    check=check,
    accumulates=False,  # its step already cuts the batch into micro-batches, and its schedule runs their backward
    # the distributed engine: each process holds one stage's plain gradients, and a scaler of its own sees only those
    overflow_seen_by_all=lambda setup: setup.pipeline.engine != "distributed",
    options=("partition", "pipeline"),
    cost=StagedCost(micro_batched=True),
    details_type=PipelineDetails,
)
