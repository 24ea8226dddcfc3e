"""`ddp`: DistributedDataParallel, one process per device launched by torchrun; gloo on CPU, nccl on CUDA."""

from torch import nn
from torch.nn.parallel import DistributedDataParallel

from parabench.buckets import ddp_buckets
from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, StrategySetup, forward_backward
from parabench.strategies.cost import ReplicaCost, ReplicaStep, StepPrediction, data_parallel_step
from parabench.strategies.per_device import replica, replica_per_device


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Wrap the model in DDP: gradients are averaged across processes during backward."""
    model = model.to(process.device)
    device_ids = [process.device.index] if process.device.type == "cuda" else None
    wrapped = DistributedDataParallel(model, device_ids=device_ids)
    return replica(
        wrapped, model, process, forward_backward(wrapped, setup.precision), model.state_dict, no_sync=wrapped.no_sync
    )


def step_cost(step: ReplicaStep) -> StepPrediction:
    """DDP's buckets (buckets.ddp_buckets) all-reduced during backward: every bucket but the last hidden behind the
    rest of the backward pass, wholly on devices of their own, and on one CPU only while it waits (1 - the links'
    cpu_share: the rest takes the cores the backward needs); its buffers broadcast from rank 0 before each forward."""
    hideable = 1.0 if step.own_devices else 1 - step.links.cpu_share
    buckets = ddp_buckets(step.sizes.gradient_bytes)
    broadcast = step.sizes.buffer_bytes
    return data_parallel_step(step.compute_s, step.backward_s, buckets, step.links, step.devices, hideable, broadcast)


STRATEGY = replica_per_device(
    "ddp",
    "DistributedDataParallel: one process per device, gradients all-reduced in buckets during backward",
    apply,
    ReplicaCost(step_cost),
    headline=True,
    all_reduces_gradients=True,
)
