"""`zero`: ZeRO stage 1, DDP with torch.distributed.optim.ZeroRedundancyOptimizer: gradients all-reduced whole as DDP
does, each process keeping the optimiser state of its share of the parameters, stepping that share and broadcasting
it to the others."""

from dataclasses import replace
from typing import Any, cast

import torch
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer

from parabench.runtime.process import Process
from parabench.strategies import ddp
from parabench.strategies.base import OptimizerBuilder, Parallelized, ParamGroups, StrategySetup
from parabench.strategies.cost import ReplicaCost, ReplicaStep, StepPrediction
from parabench.strategies.per_device import replica_per_device


class ShardedOptimizer(ZeroRedundancyOptimizer):
    """ZeroRedundancyOptimizer whose state is this process's own shard (its local optimiser's): every process saves
    and loads its own, as the training loop checkpoints every rank's optimiser. The whole state would need a
    consolidate_state_dict() onto one rank first, a collective the checkpoint does not need. The parameter groups the
    loop sees (whose learning rate its schedule sets) reach the shard's only at each step: both ways, they are copied
    here."""

    def state_dict(self) -> dict[str, object]:
        """This process's shard: its local optimiser's state, under the groups' settings as the loop last set them."""
        copy_settings(self.param_groups, self.optim.param_groups)
        shard: dict[str, object] = self.optim.state_dict()
        return shard

    def load_state_dict(self, state_dict: dict[str, object]) -> None:
        """Load this process's shard and its groups' settings, into the groups the loop sees too."""
        self.optim.load_state_dict(state_dict)
        copy_settings(self.optim.param_groups, self.param_groups)


def copy_settings(source: list[dict[str, Any]], target: list[dict[str, Any]]) -> None:
    """Every setting of each parameter group (learning rate, momentum...) onto its counterpart, the parameters aside."""
    for given, taken in zip(source, target, strict=True):
        taken.update({key: value for key, value in given.items() if key != "params"})


def sharded_optimizer(build: OptimizerBuilder, groups: ParamGroups) -> torch.optim.Optimizer:
    """The workload's optimiser over this process's share of each parameter group, wrapped by ZeRO (which calls
    optimizer_class(its share, **defaults): any callable does, the workload's builder included). Each process's share
    lives in one flat bucket (parameters_as_bucket_view), so that after the step it goes to the others in one
    broadcast, not one a parameter: on 2 CPU processes, 76 broadcasts of ResNet-18's tensors took 42 ms a step."""
    built = cast(type[torch.optim.Optimizer], lambda shard, **defaults: build(shard))
    return ShardedOptimizer(groups, optimizer_class=built, parameters_as_bucket_view=True)


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """DDP's replica, stepped by a sharded optimiser."""
    return replace(ddp.apply(model, process, setup), make_optimizer=sharded_optimizer)


def step_cost(step: ReplicaStep) -> StepPrediction:
    """DDP's step (its buckets all-reduced during backward, its buffers broadcast), the optimizer stepping 1/n of the
    parameters instead of all, and each process's share of the parameters (one bucket) broadcast to the others after
    it: n broadcasts of 1/n of their bytes."""
    all_reduced = ddp.step_cost(step)
    saved = step.optimizer_s * (1 - 1 / step.devices)
    share = step.sizes.total_gradient_bytes / step.devices
    broadcasts = step.devices * step.links.broadcast_seconds(share, step.devices)
    return StepPrediction(all_reduced.compute_s - saved, all_reduced.exposed_communication_s + broadcasts)


STRATEGY = replica_per_device(
    "zero",
    "ZeRO stage 1 (ZeroRedundancyOptimizer over DDP): optimiser state sharded across processes, gradients all-reduced",
    apply,
    ReplicaCost(step_cost),
    all_reduces_gradients=True,
)
