"""This process's place in the job: rank, world size, device; joined from torchrun's environment, left at the end."""

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from parabench.runtime.hardware import Machine


@dataclass(frozen=True)
class Process:
    """Rank and device of the current process (rank 0 of 1 when not launched by torchrun)."""

    rank: int
    local_rank: int
    world_size: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Only the main process logs and writes files."""
        return self.rank == 0


def launched_by_torchrun() -> bool:
    """True inside a worker that torchrun started."""
    return "TORCHELASTIC_RUN_ID" in os.environ and "LOCAL_RANK" in os.environ


def start(machine: Machine) -> Process:
    """Join the process group when torchrun launched us; pick this process's device."""
    if not launched_by_torchrun():
        device = torch.device("cuda", 0) if machine.accelerator == "cuda" else torch.device("cpu")
        return Process(rank=0, local_rank=0, world_size=1, device=device)
    local_rank = int(os.environ["LOCAL_RANK"])
    if machine.accelerator == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend=machine.backend, device_id=device if device.type == "cuda" else None)
    return Process(rank=dist.get_rank(), local_rank=local_rank, world_size=dist.get_world_size(), device=device)


def stop() -> None:
    """Leave the process group, if we joined one."""
    if dist.is_initialized():
        dist.destroy_process_group()
