"""`model_parallel`: one process, the model's blocks cut into stages, one per device, the whole batch at once.

The tutorial's step 2: stage i runs on device i and its activations move on to the next stage's device.
The cut is balanced by parameter count or by each block's forward+backward time, or is the seed document's
(partition.balance); each stage's measured share of the time is recorded either way.
"""

import torch
from torch import Tensor, nn

from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, Strategy, StrategySetup, forward_backward
from parabench.strategies.cost import StagedCost
from parabench.strategies.partition import CutDetails, StageCut, choose_cut, cut
from parabench.strategies.stage_devices import check_stages, devices_virtual, stage_count, stage_devices


class StagedModel(nn.Module):
    """The model's blocks cut into stages, stage i on devices[i]; the model itself stays whole and unchanged."""

    def __init__(self, model: nn.Sequential, devices: list[torch.device], sizes: list[int]):
        super().__init__()
        self.model = model
        self.devices = devices
        self.place(sizes)

    def place(self, sizes: list[int]) -> None:
        """Cut the model into stages of `sizes` blocks and move each stage to its device."""
        self.sizes = sizes
        self.stages = cut(self.model, sizes)
        for stage, device in zip(self.stages, self.devices):
            stage.to(device)

    def run_stage(self, index: int, activation: Tensor) -> Tensor:
        """Stage `index` on its input; its output moves on to the next stage's device, as in the tutorial."""
        output: Tensor = self.stages[index](activation)
        if index + 1 < len(self.stages):
            output = output.to(self.devices[index + 1], non_blocking=True)
        return output

    def forward(self, inputs: Tensor) -> Tensor:
        activation = inputs
        for index in range(len(self.stages)):
            activation = self.run_stage(index, activation)
        return activation


def stage_cut(model: nn.Sequential, setup: StrategySetup, device: torch.device, units: int, stages: int) -> StageCut:
    """`stages` stages, cut as partition.balance says; every block is timed (forward+backward) on `device` with a
    random batch of `units` units (samples or episodes) of the workload's input shape."""
    sample = torch.rand((units, *setup.batch_shape[1:]), device=device)
    return choose_cut(model, setup.partition.balance, stages, sample, setup.documented_cut)


def staged_parallel(staged: StagedModel, setup: StrategySetup, details: CutDetails) -> Parallelized:
    """One process drives every stage of `staged`."""
    details.stages, details.devices_virtual = len(staged.devices), devices_virtual(setup)
    return Parallelized(
        module=staged,
        model=staged.model,
        input_device=staged.devices[0],
        devices=tuple(dict.fromkeys(staged.devices)),
        shard_index=0,
        shard_count=1,
        train_step=forward_backward(staged, setup.precision),
        full_state_dict=staged.model.state_dict,
        details=details,
    )


def apply(model: nn.Sequential, process: Process, setup: StrategySetup) -> Parallelized:
    """Cut the model into partition.stages stages, one per device; time the blocks on a whole batch."""
    devices = stage_devices(setup)
    chosen = stage_cut(model, setup, devices[0], setup.batch_shape[0], len(devices))
    return staged_parallel(StagedModel(model, devices, chosen.sizes), setup, details=CutDetails(**chosen.details()))


STRATEGY = Strategy(
    name="model_parallel",
    summary="model parallelism: the blocks cut into one stage per device, activations moved between them",
    apply=apply,
    devices_per_node=stage_count,
    check=lambda setup, global_batch: check_stages("model_parallel", setup),
    options=("partition",),
    reference_line=True,
    cost=StagedCost(micro_batched=False),
    details_type=CutDetails,
)
