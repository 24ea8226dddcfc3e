"""What a strategy's cost model reads and answers: the prediction (prediction/) asks each strategy for its step at N
devices from one device's measurements, over the links it models (Fabric: prediction/collectives.py's Links), without
knowing its name; and the step shapes more than one strategy shares (a bucketed all-reduce, a pipeline's bound)."""

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from parabench.strategies.details import Details

BACKWARD_SHARE = 2 / 3  # of forward and backward: the backward pass does about twice the forward's work


class Fabric(Protocol):
    """What a cost model may ask of the links its collectives cross, each in seconds: a collective over `ranks`, one
    message between two ranks, a broadcast along a chain, a copy within a device; and the costs the probe measured
    beyond the bytes (the share of an all-reduce that keeps a CPU busy; a sharded, or replicated, block's fixed
    cost)."""

    @property
    def cpu_share(self) -> float: ...

    @property
    def shard_unit_s(self) -> float: ...

    @property
    def replicate_unit_s(self) -> float: ...

    def all_reduce_s(self, size_bytes: float, ranks: int) -> float: ...

    def all_gather_s(self, size_bytes: float, ranks: int) -> float: ...

    def reduce_scatter_s(self, size_bytes: float, ranks: int) -> float: ...

    def all_reduce_latency_s(self, ranks: int) -> float: ...

    def message_seconds(self, size_bytes: float) -> float: ...

    def broadcast_seconds(self, size_bytes: float, ranks: int) -> float: ...

    def copy_s(self, size_bytes: float) -> float: ...


@dataclass(frozen=True)
class StepPrediction:
    """A strategy's predicted step: its compute and the communication left exposed, in seconds."""

    compute_s: float
    exposed_communication_s: float

    @property
    def step_s(self) -> float:
        """The whole predicted step."""
        return self.compute_s + self.exposed_communication_s


@dataclass(frozen=True)
class ModelSizes:
    """What the model's size sets of a step's communication, as single measured it: each gradient's bytes in the
    order the model registers its parameters (bucketed as buckets.py says), and its buffers' bytes."""

    gradient_bytes: tuple[int, ...]
    buffer_bytes: int

    @property
    def total_gradient_bytes(self) -> int:
        """Every gradient's bytes (the parameters' alike)."""
        return sum(self.gradient_bytes)


@dataclass(frozen=True)
class ReplicaStep:
    """One step of `devices` replicas, as the prediction measured or scaled it: what one replica computes (`compute_s`,
    of which `forward_backward_s` is its forward and backward), the model's sizes, the `links` its collectives cross
    (and `across`, the links between the nodes where its replicas span them), whether the replicas have devices of
    their own (`own_devices`; else they share one CPU's cores), what its run recorded of the strategy (`details`), the
    bytes of a step's inputs, outputs and their gradients (`batch_bytes`, for one process scattering them), and what
    the optimizer's step over the whole model takes within compute_s (`optimizer_s`, for one that shards it)."""

    compute_s: float
    forward_backward_s: float
    sizes: ModelSizes
    links: Fabric
    devices: int
    own_devices: bool
    details: Details
    batch_bytes: float = 0.0
    across: Fabric | None = None
    optimizer_s: float = 0.0

    @property
    def backward_s(self) -> float:
        """The backward pass's share of the forward and backward."""
        return BACKWARD_SHARE * self.forward_backward_s


def as_recorded(details: Details, devices: int, nodes: int) -> Details:
    """A strategy whose choices do not change with the device count: its details as its run recorded them."""
    return details


@dataclass(frozen=True)
class ReplicaCost:
    """The cost model of a data-parallel or sharded strategy: replicas computing their shares, then communicating.

    step(replicas): the predicted step. one_process: one process drives every device (dp), so the first device takes
    in the whole global batch and steps the optimizer alone, and it is never predicted beyond one node.
    at_scale(details, devices, nodes): the details the strategy would record at `devices` on `nodes` nodes (fsdp: its
    mesh). shards_within_node(details): whether its shards' collectives stay within a node while only its replicas'
    cross the network (fsdp's hybrid sharding). described(details): what the checks call it beside its name."""

    step: Callable[[ReplicaStep], StepPrediction]
    one_process: bool = False
    at_scale: Callable[[Details, int, int], Details] = as_recorded
    shards_within_node: Callable[[Details], bool] = lambda details: False
    described: Callable[[Details], str] = lambda details: ""


@dataclass(frozen=True)
class StagedCost:
    """The cost model of a model cut into stages: its schedule's bound over its stages' seconds (pipeline_step).

    micro_batched: the schedule runs micro-batches (a pipeline); else one batch goes through the stages one after
    another (model parallelism), so together they take single's forward and backward."""

    micro_batched: bool


BUCKET_COPIES = 2  # a bucketed all-reduce copies every gradient into its flat bucket and back


def data_parallel_step(
    compute_s: float,
    backward_s: float,
    bucket_bytes: Sequence[float],
    links: Fabric,
    ranks: int,
    hideable: float,
    broadcast_bytes: float = 0.0,
) -> StepPrediction:
    """ddp or allreduce: a replica's compute, the copies of every gradient into its bucket and back (at the links'
    copy bandwidth, within the device's memory: compute on the critical path), and the ring all-reduce of each
    bucket (`bucket_bytes`, in the order they go: buckets.py) over the links' all-reduce, one call each. Of every
    bucket but the last (which waits for the end of the backward pass), the share `hideable` of its all-reduce can go
    while the backward pass goes on, as far as the backward lasts: all of it for ddp on devices of their own, only its
    waits where the replicas share one CPU's cores (1 - the links' cpu_share: the rest keeps a core the backward
    needs), none for allreduce, after backward. The rest is exposed. `broadcast_bytes` go from rank 0 to the others
    before the forward (ddp's buffers, such as BatchNorm's running statistics), exposed too."""
    each = [links.all_reduce_s(size, ranks) for size in bucket_bytes]
    compute_s += BUCKET_COPIES * links.copy_s(sum(bucket_bytes))
    broadcast = links.broadcast_seconds(broadcast_bytes, ranks) if broadcast_bytes else 0.0
    hidden = min(hideable * sum(each[:-1]), backward_s)
    return StepPrediction(compute_s, broadcast + sum(each) - hidden)


def pipeline_bound(stage_seconds: list[float], micro_batches: int) -> dict[str, float]:
    """The least a pipeline's step can take, m x slowest + (sum - slowest), split into the work shared evenly
    (`compute`, m x the mean stage), the stages' `imbalance` (m x (slowest - mean)) and the `bubble` (sum - slowest;
    (S - 1) x stage for S equal stages: GPipe's and 1F1B's (m + S - 1) x stage)."""
    slowest, mean = max(stage_seconds), statistics.fmean(stage_seconds)
    return {
        "compute": micro_batches * mean,
        "imbalance": micro_batches * (slowest - mean),
        "bubble": sum(stage_seconds) - slowest,
    }


def pipeline_step(
    stage_seconds: list[float], micro_batches: int, transfer_seconds: Sequence[float] = ()
) -> StepPrediction:
    """A pipeline's step at its schedule's bound (GPipe and 1F1B alike): compute and imbalance, with the bubble counted
    as exposed. `transfer_seconds`, one per boundary between stages, is what one micro-batch's activation (forward) and
    its gradient (backward) take to cross it: each boundary runs as a stage of its own between the two it joins (its
    copies overlap the other stages' compute, as a copy stream or another process does), so transfers lengthen the
    fill and the drain, and bound the step where one outlasts every stage; all of that is exposed too. None given: on
    one machine's memory they are copies, not transfers."""
    bound = pipeline_bound(stage_seconds, micro_batches)
    compute = bound["compute"] + bound["imbalance"]
    if not transfer_seconds:
        return StepPrediction(compute, bound["bubble"])
    joined = [seconds for pair in zip(stage_seconds, [*transfer_seconds, 0.0], strict=True) for seconds in pair][:-1]
    whole = sum(pipeline_bound(joined, micro_batches).values())
    return StepPrediction(compute, whole - compute)
