"""What the data-parallel strategies share: one process per device, launched by torchrun, each a replica."""

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from torch import Tensor, nn

from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, Strategy, StrategySetup, TrainStep
from parabench.strategies.cost import ReplicaCost
from parabench.strategies.details import Details


def replica_per_device(
    name: str,
    summary: str,
    apply: Callable[[nn.Module, Process, StrategySetup], Parallelized],
    cost: ReplicaCost,
    options: tuple[str, ...] = (),
    headline: bool = False,
    all_reduces_gradients: bool = False,
    details_type: type[Details] = Details,
) -> Strategy:
    """A data-parallel strategy with one replica process per device (hardware.devices per node), predicted by `cost`;
    `options`, the params.yaml sections it reads; `headline`, `all_reduces_gradients` and `details_type` as Strategy
    says."""
    return Strategy(
        name=name,
        summary=summary,
        apply=apply,
        distributed=lambda setup: True,
        processes_per_node=lambda setup: setup.machine.devices,
        data_parallel=True,
        options=options,
        headline=headline,
        all_reduces_gradients=all_reduces_gradients,
        cost=cost,
        details_type=details_type,
    )


def replica(
    module: nn.Module,
    model: nn.Module,
    process: Process,
    train_step: TrainStep,
    full_state_dict: Callable[[], dict[str, Tensor]],
    details: Details | None = None,
    no_sync: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> Parallelized:
    """This process's replica: it computes on its own device, on the rank-th of world_size shares of every batch."""
    return Parallelized(
        module=module,
        model=model,
        input_device=process.device,
        devices=(process.device,),
        shard_index=process.rank,
        shard_count=process.world_size,
        train_step=train_step,
        full_state_dict=full_state_dict,
        details=details or Details(),
        no_sync=no_sync,
    )
