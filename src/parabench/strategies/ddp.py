"""`ddp`: DistributedDataParallel, one process per device launched by torchrun; gloo on CPU, nccl on CUDA."""

from torch import nn
from torch.nn.parallel import DistributedDataParallel

from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, StrategySetup, forward_backward
from parabench.strategies.per_device import replica, replica_per_device


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Wrap the model in DDP: gradients are averaged across processes during backward."""
    model = model.to(process.device)
    device_ids = [process.device.index] if process.device.type == "cuda" else None
    wrapped = DistributedDataParallel(model, device_ids=device_ids)
    return replica(
        wrapped, model, process, forward_backward(wrapped, setup.precision), model.state_dict, no_sync=wrapped.no_sync
    )


STRATEGY = replica_per_device(
    "ddp",
    "DistributedDataParallel: one process per device, gradients all-reduced in buckets during backward",
    apply,
)
