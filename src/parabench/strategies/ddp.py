"""`ddp`: DistributedDataParallel, one process per device launched by torchrun; gloo on CPU, nccl on CUDA."""

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from parabench.engine.distributed import Process
from parabench.errors import StrategyUnavailable
from parabench.strategies.base import Parallelized, Strategy, StrategySetup, forward_backward


def check_gpus(name: str, setup: StrategySetup) -> None:
    """A one-process-per-GPU strategy needs as many GPUs on this node as hardware.devices says."""
    machine = setup.machine
    if machine.accelerator == "cuda" and machine.devices > torch.cuda.device_count():
        raise StrategyUnavailable(
            f"strategy '{name}' wants hardware.devices={machine.devices} GPUs per node, "
            f"but this node has {torch.cuda.device_count()}; lower hardware.devices or set it to auto."
        )


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
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
    apply=apply,
    distributed=lambda setup: True,
    processes_per_node=lambda setup: setup.machine.devices,
    data_parallel=True,
    check=lambda setup, global_batch: check_gpus("ddp", setup),
)
