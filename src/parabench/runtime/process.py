"""This process's place in the job: rank, world size, device; joined from torchrun's environment, left at the end."""

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from parabench.runtime.hardware import Machine
from parabench.runtime.memory import keep_freed_memory


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


def restart_count() -> int:
    """How many times torchrun restarted this worker group (hardware.max_restarts); 0 outside torchrun."""
    return int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def start(machine: Machine) -> Process:
    """Keep freed memory for the next step; join the process group when torchrun launched us; pick this process's
    device."""
    keep_freed_memory()
    if not launched_by_torchrun():
        device = torch.device("cuda", 0) if machine.accelerator == "cuda" else torch.device("cpu")
        return Process(rank=0, local_rank=0, world_size=1, device=device)
    local_rank = int(os.environ["LOCAL_RANK"])
    if machine.accelerator == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    timeout = timedelta(seconds=machine.timeout_s)
    dist.init_process_group(
        backend=machine.backend,
        device_id=device if device.type == "cuda" else None,
        timeout=timeout,
        **_store_of_this_attempt(timeout),
    )
    return Process(rank=dist.get_rank(), local_rank=local_rank, world_size=dist.get_world_size(), device=device)


def _store_of_this_attempt(timeout: timedelta) -> dict[str, Any]:
    """After a torchrun restart, a store prefix of this attempt's own (else init_process_group's defaults).

    Workers reach the agent's store directly (TORCHELASTIC_USE_AGENT_STORE), the same store in every attempt, so
    a restarted group would read the addresses the failed group's ranks published and connect to dead ports.
    """
    restarts = restart_count()
    if restarts == 0 or os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return {}
    agent_store = dist.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, timeout=timeout
    )
    return {
        "store": dist.PrefixStore(f"parabench/attempt-{restarts}", agent_store),
        "rank": int(os.environ["RANK"]),
        "world_size": int(os.environ["WORLD_SIZE"]),
    }


def stop() -> None:
    """Leave the process group, if we joined one."""
    if dist.is_initialized():
        dist.destroy_process_group()
