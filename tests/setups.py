"""A one-core CPU machine and strategy setup for tests that build plans or apply strategies by hand."""

import torch

from parabench.engine.distributed import Process
from parabench.engine.hardware import Machine
from parabench.strategies.base import StrategySetup
from parabench.strategies.options import PartitionOptions, PipelineOptions

CPU_PROCESS = Process(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"))


def cpu_setup(devices: int = 1, split_size: int = 8, engine: str = "inprocess", schedule: str = "gpipe",
              balance: str = "parameters", blocks: int = 6, sample_shape: tuple[int, ...] = (8, 1, 12, 12)
              ) -> StrategySetup:
    """A CPU machine with `devices` (virtual) devices, one thread per process, and the given strategy options."""
    machine = Machine(accelerator="cpu", devices=devices, nodes=1, backend="gloo", cores=1, max_restarts=0,
                      threads_setting=1)
    return StrategySetup(
        machine=machine,
        partition=PartitionOptions(balance=balance),
        pipeline=PipelineOptions(engine=engine, split_size=split_size, schedule=schedule),
        blocks=blocks,
        sample_shape=sample_shape,
    )
