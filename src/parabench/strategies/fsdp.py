"""`fsdp`: fully sharded data parallel (FSDP2 `fully_shard`): each process keeps a 1/world share of the weights."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

from torch import Tensor, nn

from parabench.runtime.process import Process
from parabench.strategies.allreduce import broadcast_from_rank0
from parabench.strategies.base import Parallelized, StrategySetup, forward_backward
from parabench.strategies.per_device import replica, replica_per_device


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Shard each top-level block, then the root; gradients are reduce-scattered and averaged in backward."""
    # Imported here: torch.distributed.checkpoint costs 0.6 s at the start of every process that imports it.
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    model = model.to(process.device)
    # fully_shard keeps each rank's slice of its *own* weights: make them rank 0's first, as DDP would.
    broadcast_from_rank0(model)
    mesh = init_device_mesh(process.device.type, (process.world_size,))
    for block in model.children():
        fully_shard(block, mesh=mesh)
    root = fully_shard(model, mesh=mesh)

    def full_state_dict() -> dict[str, Tensor]:
        """Gather the unsharded weights (a collective) onto rank 0's CPU, under the plain model's keys."""
        state = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        return cast(dict[str, Tensor], state)  # a full state dict holds plain tensors

    @contextmanager
    def no_sync() -> Iterator[None]:
        """Backward keeps whole local gradients, reduce-scattered at the next step outside (FSDP2's no_sync)."""
        root.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            root.set_requires_gradient_sync(True)

    return replica(
        model,
        model,
        process,
        # Mixed precision by autocast, as the other strategies, not by FSDP2's MixedPrecisionPolicy: the policy casts
        # BatchNorm's weights but not its running statistics, and torch's CPU batch_norm refuses the mix.
        forward_backward(model, setup.precision),
        full_state_dict,
        details={"sharded_blocks": len(list(model.children()))},
        no_sync=no_sync,
    )


STRATEGY = replica_per_device(
    "fsdp",
    "FullyShardedDataParallel (FSDP2): one process per device, parameters sharded across processes, "
    "gathered per block for compute",
    apply,
    whole_gradients=False,  # each process keeps its shard of the gradients
)
