"""`ddp`: DistributedDataParallel, one process per device launched by torchrun; gloo on CPU, nccl on CUDA."""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from parabench.engine.distributed import Process
from parabench.engine.hardware import Machine
from parabench.errors import StrategyUnavailable
from parabench.strategies.base import Parallelized, Strategy, forward_backward


def _check(machine: Machine) -> None:
    if machine.accelerator == "cuda" and machine.devices > torch.cuda.device_count():
        raise StrategyUnavailable(
            f"strategy 'ddp' wants hardware.devices={machine.devices} GPUs per node, "
            f"but this node has {torch.cuda.device_count()}; lower hardware.devices or set it to auto."
        )


def apply(model: nn.Module, process: Process) -> Parallelized:
    """Wrap the model in DDP: gradients are averaged across processes during backward."""
    model = model.to(process.device)
    device_ids = [process.device.index] if process.device.type == "cuda" else None
    wrapped = DistributedDataParallel(model, device_ids=device_ids)
    return Parallelized(
        module=wrapped,
        input_device=process.device,
        shard_index=process.rank,
        shard_count=process.world_size,
        train_step=forward_backward(wrapped),
        full_state_dict=model.state_dict,
    )


STRATEGY = Strategy(
    name="ddp",
    summary="DistributedDataParallel: one process per device, gradients all-reduced in buckets during backward",
    launcher="torchrun",
    processes_per_node=lambda machine: machine.devices,
    check=_check,
    apply=apply,
)
