"""`fsdp`: fully sharded data parallel (FSDP2 `fully_shard`): each process keeps a 1/world share of the weights."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, cast

from torch import Tensor, nn

from parabench.runtime.process import Process
from parabench.strategies.allreduce import broadcast_from_rank0
from parabench.strategies.base import Parallelized, StrategySetup, forward_backward
from parabench.strategies.cost import Fabric, ReplicaCost, ReplicaStep, StepPrediction
from parabench.strategies.details import Details
from parabench.strategies.per_device import replica, replica_per_device


def mesh_shape(sharding: str, world_size: int, nodes: int) -> tuple[int, ...]:
    """The device mesh of a sharding mode: one dimension sharded over every rank (full, grad_op), or (replicate,
    shard) for HSDP: shards of 1, every rank a replica (none), or shards within a node, replicas across (hybrid)."""
    if sharding == "none":
        return (world_size, 1)
    if sharding == "hybrid":
        return (nodes, world_size // nodes)
    return (world_size,)


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Shard each top-level block, then the root; gradients are reduce-scattered and averaged in backward."""
    # Imported here: torch.distributed.checkpoint costs 0.6 s at the start of every process that imports it.
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    model = model.to(process.device)
    # fully_shard keeps each rank's slice of its *own* weights: make them rank 0's first, as DDP would.
    broadcast_from_rank0(model)
    sharding = setup.fsdp.sharding
    shape = mesh_shape(sharding, process.world_size, setup.machine.nodes)
    names = ("replicate", "shard") if len(shape) == 2 else None  # FSDP2 reads a 2-D mesh as HSDP by these names
    mesh = init_device_mesh(process.device.type, shape, mesh_dim_names=names)
    reshard = sharding != "grad_op"  # grad_op keeps each block's weights gathered from its forward to its backward
    for block in model.children():
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard)
    root = fully_shard(model, mesh=mesh, reshard_after_forward=reshard)

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
        details=ShardingDetails(sharded_blocks=len(list(model.children())), sharding=sharding, mesh=list(shape)),
        no_sync=no_sync,
    )


class ShardingDetails(Details):
    """What an fsdp run records of itself: how many blocks it sharded, its sharding, and its mesh (one dimension: one
    replica sharded over every rank; two: FSDP2's replicate x shard)."""

    sharded_blocks: int = 0
    sharding: Literal["full", "grad_op", "none", "hybrid"] = "full"
    mesh: list[int] | None = None

    def replicas_and_shards(self, devices: int) -> tuple[int, int]:
        """The replicas and shards of its mesh, or full sharding over `devices` where none was recorded."""
        mesh = self.mesh or [devices]
        return (1, mesh[0]) if len(mesh) == 1 else (mesh[0], mesh[1])


def sharding_details(details: Details) -> ShardingDetails:
    """fsdp's own record, as the prediction read it back (Strategy.details_of)."""
    assert isinstance(details, ShardingDetails), f"not fsdp's record: {details!r}"
    return details


def fsdp_step(
    compute_s: float,
    parameter_bytes: float,
    within: Fabric,
    across: Fabric,
    replicas: int,
    shards: int,
    gathers_per_step: int,
    units: int,
) -> StepPrediction:
    """fsdp over a mesh of `replicas` x `shards` ranks (FSDP2's: full and grad_op shard over every rank, one replica;
    none makes every rank a replica of shards of one; hybrid shards within a node and replicates across the nodes).
    Within a replica every parameter is all-gathered for forward and (resharded after forward: `gathers_per_step` 2;
    grad_op keeps them: 1) again for backward, and every gradient reduce-scattered, over its `shards` ranks
    (`within`'s fits); then each of the `units` sharded blocks all-reduces its gradients' shard across the `replicas`
    (`across`'s all-reduce, one call a block). None of it is hidden (an upper bound where prefetching overlaps it).
    Each block also has a fixed cost beyond its bytes, as the probe timed it on tiny blocks: `within`'s shard_unit_s
    where there are several shards, `across`'s replicate_unit_s where there are several replicas (each holds the
    block's hooks: both together count them twice, an upper bound). And the copies around the collectives, at
    `within`'s copy bandwidth: each all-gather copies the local shard in and the whole parameters out, the
    reduce-scatter the whole gradients in and the shard out: (gathers + 1) x (1 + 1/shards) times the parameters'
    bytes, 3 + 3/n for full sharding over n ranks and 6 for shards of one."""
    gathers = gathers_per_step * within.all_gather_s(parameter_bytes, shards)
    scatter = within.reduce_scatter_s(parameter_bytes, shards)
    replicated = 0.0
    if replicas > 1:
        calls_beyond_one = max(units, 1) - 1
        replicated = across.all_reduce_s(parameter_bytes / shards, replicas)
        replicated += calls_beyond_one * across.all_reduce_latency_s(replicas)
    fixed = units * (within.shard_unit_s * (shards > 1) + across.replicate_unit_s * (replicas > 1))
    copies = within.copy_s((gathers_per_step + 1) * (1 + 1 / shards) * parameter_bytes)
    return StepPrediction(compute_s + copies, gathers + scatter + replicated + fixed)


def step_cost(step: ReplicaStep) -> StepPrediction:
    """Over the mesh and sharding its run recorded (full by default) and its `sharded_blocks`: within each replica two
    all-gathers of the parameters (one for grad_op, which keeps them from forward to backward) and a reduce-scatter of
    the gradients over its shards (`links`), then each block's gradient shard all-reduced across the replicas
    (`across`, where they span the nodes), with the copies around them and each block's fixed cost (fsdp_step)."""
    details = sharding_details(step.details)
    replicas, shards = details.replicas_and_shards(step.devices)
    gathers = 1 if details.sharding == "grad_op" else 2
    units = details.sharded_blocks
    parameter_bytes = step.sizes.total_gradient_bytes
    return fsdp_step(
        step.compute_s, parameter_bytes, step.links, step.across or step.links, replicas, shards, gathers, units
    )


def at_scale(details: Details, devices: int, nodes: int) -> Details:
    """Its recorded sharding (full where none ran) on the mesh it would build over `devices` on `nodes` nodes."""
    recorded = sharding_details(details)
    return recorded.model_copy(update={"mesh": list(mesh_shape(recorded.sharding, devices, nodes))})


STRATEGY = replica_per_device(
    "fsdp",
    "FullyShardedDataParallel (FSDP2): one process per device, parameters sharded across processes, "
    "gathered per block for compute",
    apply,
    ReplicaCost(
        step_cost,
        at_scale=at_scale,
        shards_within_node=lambda details: sharding_details(details).sharding == "hybrid",
        described=lambda details: sharding_details(details).sharding,
    ),
    options=("fsdp",),
    details_type=ShardingDetails,
)
