"""`allreduce`: data parallelism written out by hand (d2l's allreduce): broadcast once, then average gradients."""

from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.distributed as dist
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.buckets import allreduce_buckets, capped_groups
from parabench.runtime.process import Process
from parabench.strategies.base import (
    LossFn,
    Parallelized,
    StepResult,
    StrategySetup,
    TrainStep,
    forward_backward,
)
from parabench.strategies.cost import ReplicaCost, ReplicaStep, StepPrediction, data_parallel_step
from parabench.strategies.options import Precision
from parabench.strategies.per_device import replica, replica_per_device


def broadcast_from_rank0(model: nn.Module) -> None:
    """Make every replica start from rank 0's parameters and buffers."""
    for tensor in [*model.parameters(), *model.buffers()]:
        dist.broadcast(tensor.data, src=0)


def buckets(grads: list[Tensor]) -> list[list[Tensor]]:
    """Consecutive gradients grouped as buckets.capped_counts says: few large messages beat many small ones."""
    return capped_groups(grads, [grad.numel() * grad.element_size() for grad in grads])


def average_gradients(model: nn.Module, world_size: int) -> None:
    """Sum each flat bucket of gradients over all processes, and divide by their number while copying back: two
    passes over the gradients' memory, as DDP's reducer makes (it divides while copying into its bucket)."""
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    for bucket in buckets(grads):
        flat = torch.cat([grad.reshape(-1) for grad in bucket])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        for grad, summed in zip(bucket, flat.split([grad.numel() for grad in bucket])):
            torch.div(summed.view_as(grad), world_size, out=grad)


class GradientAverage:
    """The hand-written all-reduce of a replica's gradients after each backward, unless held back (gradient
    accumulation: the micro-steps before the last keep summing local gradients)."""

    def __init__(self, model: nn.Module, world_size: int, precision: Precision):
        self.model, self.world_size, self.precision, self.held = model, world_size, precision, False

    def step(self) -> TrainStep:
        """Forward and backward on this process's shard, then the gradient average (not while held)."""
        local_step = forward_backward(self.model, self.precision)

        def step(batch: Batch, loss_fn: LossFn) -> StepResult:
            result = local_step(batch, loss_fn)
            if not self.held:
                average_gradients(self.model, self.world_size)
            return result

        return step

    @contextmanager
    def held_back(self) -> Iterator[None]:
        """Within it, backward leaves the gradients local."""
        self.held = True
        try:
            yield
        finally:
            self.held = False


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Move the model to this process's device and copy rank 0's weights to every replica."""
    model = model.to(process.device)
    broadcast_from_rank0(model)
    average = GradientAverage(model, process.world_size, setup.precision)
    return replica(model, model, process, average.step(), model.state_dict, no_sync=average.held_back)


def step_cost(step: ReplicaStep) -> StepPrediction:
    """Its own buckets of at most 25 MiB (buckets.allreduce_buckets), all-reduced after the backward: none hidden."""
    buckets = allreduce_buckets(step.sizes.gradient_bytes)
    return data_parallel_step(step.compute_s, step.backward_s, buckets, step.links, step.devices, hideable=0.0)


STRATEGY = replica_per_device(
    "allreduce",
    "hand-written data parallelism: one process per device, gradients all-reduced in flat buckets after backward",
    apply,
    ReplicaCost(step_cost),
    all_reduces_gradients=True,
)
