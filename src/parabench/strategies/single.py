"""`single`: one process, one device; the reference every other strategy is compared with."""

from torch import nn

from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, Strategy, StrategySetup, forward_backward


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Move the model to this process's device; nothing else."""
    model = model.to(process.device)
    return Parallelized(
        module=model,
        model=model,
        input_device=process.device,
        devices=(process.device,),
        shard_index=0,
        shard_count=1,
        train_step=forward_backward(model, setup.precision),
        full_state_dict=model.state_dict,
    )


STRATEGY = Strategy(
    name="single",
    summary="one process on one device: the reference",
    apply=apply,
    baseline=True,
    reference_line=True,
)
