"""`dp`: torch.nn.DataParallel, one process splitting each batch over this machine's CUDA GPUs."""

import torch
from torch import nn
from torch.nn import DataParallel

from parabench.errors import StrategyUnavailable
from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, Strategy, StrategySetup, forward_backward
from parabench.strategies.cost import Fabric, ReplicaCost, ReplicaStep, StepPrediction
from parabench.strategies.details import Details


class DataParallelDetails(Details):
    """What a dp run records of itself: the devices its one process drives."""

    devices: int = 0


def check(setup: StrategySetup, global_batch: int) -> None:
    """DataParallel only runs on CUDA GPUs (the plan has checked that there are hardware.devices of them)."""
    if setup.machine.accelerator != "cuda":
        raise StrategyUnavailable(
            "strategy 'dp' (torch.nn.DataParallel) needs CUDA GPUs and this run is on the CPU "
            "(hardware.accelerator); use strategy ddp for data parallelism on the CPU."
        )


def apply(model: nn.Module, process: Process, setup: StrategySetup) -> Parallelized:
    """Put the model on cuda:0; each forward replicates it to every GPU and scatters the batch across them."""
    devices = setup.machine.devices
    first_gpu = torch.device("cuda", 0)
    model = model.to(first_gpu)
    wrapped = DataParallel(model, device_ids=list(range(devices)))
    return Parallelized(
        module=wrapped,
        model=model,
        input_device=first_gpu,
        devices=tuple(torch.device("cuda", index) for index in range(devices)),
        shard_index=0,
        shard_count=1,
        train_step=forward_backward(wrapped, setup.precision),
        full_state_dict=model.state_dict,
        details=DataParallelDetails(devices=devices),
    )


def replicated_step(
    compute_s: float, parameter_bytes: float, batch_bytes: float, links: Fabric, ranks: int
) -> StepPrediction:
    """dp (torch.nn.DataParallel: one process drives every device): each step copies the parameters from the first
    device to the others (replicate: a broadcast) and reduces every gradient back onto it, each pipelined along a
    chain of messages: (n - 1) message steps, the whole size over each link once. Around the forward it scatters the
    batch's inputs from the first device, gathers the outputs onto it, and in backward scatters the outputs'
    gradients: three copies between the first device and each other one, all at once, each of its share, so
    (n - 1) / n of `batch_bytes` (the inputs plus twice the outputs) through the first device's link and one latency
    each. None of it overlaps
    the compute. The Python driving n devices from one process (its threads and the GIL) is left out: no
    measurement here gives it."""
    if ranks == 1:
        return StepPrediction(compute_s, 0.0)
    one_way = links.broadcast_seconds(parameter_bytes, ranks)
    scatter_gather = 3 * links.message_seconds((ranks - 1) / ranks * batch_bytes / 3)  # three copies, the bytes once
    return StepPrediction(compute_s, 2 * one_way + scatter_gather)


def step_cost(step: ReplicaStep) -> StepPrediction:
    """The parameters broadcast from the first device and the gradients reduced onto it, and the inputs, outputs and
    their gradients scattered and gathered there (replicated_step): all exposed."""
    parameter_bytes = step.sizes.total_gradient_bytes
    return replicated_step(step.compute_s, parameter_bytes, step.batch_bytes, step.links, step.devices)


STRATEGY = Strategy(
    name="dp",
    summary="DataParallel: one process, each batch split over the GPUs and gradients summed on the first",
    apply=apply,
    devices_per_node=lambda setup: setup.machine.devices,
    data_parallel=True,
    check=check,
    refuses_compile="DataParallel replicates the module at every forward, which torch.compile does not support",
    cost=ReplicaCost(step_cost, one_process=True),
    details_type=DataParallelDetails,
)
