"""What a strategy's cost model reads and answers: the prediction (report/scaling.py) asks each strategy for its step
at N devices from one device's measurements, over the links prediction.py models, without knowing its name."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from parabench.prediction import Links, StepPrediction

BACKWARD_SHARE = 2 / 3  # of forward and backward: the backward pass does about twice the forward's work


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
    links: Links
    devices: int
    own_devices: bool
    details: Mapping[str, Any]
    batch_bytes: float = 0.0
    across: Links | None = None
    optimizer_s: float = 0.0

    @property
    def backward_s(self) -> float:
        """The backward pass's share of the forward and backward."""
        return BACKWARD_SHARE * self.forward_backward_s


def as_recorded(details: Mapping[str, Any], devices: int, nodes: int) -> dict[str, Any]:
    """A strategy whose choices do not change with the device count: its details as its run recorded them."""
    return dict(details)


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
    at_scale: Callable[[Mapping[str, Any], int, int], dict[str, Any]] = as_recorded
    shards_within_node: Callable[[Mapping[str, Any]], bool] = lambda details: False
    described: Callable[[Mapping[str, Any]], str] = lambda details: ""


@dataclass(frozen=True)
class StagedCost:
    """The cost model of a model cut into stages: its schedule's bound over its stages' seconds (pipeline_step).

    micro_batched: the schedule runs micro-batches (a pipeline); else one batch goes through the stages one after
    another (model parallelism), so together they take single's forward and backward."""

    micro_batched: bool
