"""Resolve params.yaml's `hardware` (auto values) against the machine at hand."""

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from parabench.config import Hardware

CPU_DEFAULT_DEVICES = 2


@dataclass(frozen=True)
class Machine:
    """Concrete hardware: accelerator, devices per node, nodes, backend, cores."""

    accelerator: str
    devices: int
    nodes: int
    backend: str
    cores: int
    max_restarts: int
    threads_setting: int | None

    def threads_per_process(self, processes_per_node: int) -> int:
        """Threads each process may use: the setting, or this node's cores shared evenly."""
        if self.threads_setting is not None:
            return self.threads_setting
        return max(1, self.cores // processes_per_node)


def usable_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def resolve(hardware: "Hardware") -> Machine:
    """Turn `auto` into numbers: cuda if present, its GPU count as devices, nccl on cuda and gloo on cpu."""
    accelerator = hardware.accelerator
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.is_available() else "cpu"
    gpus = torch.cuda.device_count() if accelerator == "cuda" else 0
    devices = hardware.devices
    if devices == "auto":
        devices = gpus if accelerator == "cuda" else CPU_DEFAULT_DEVICES
    backend = hardware.backend
    if backend == "auto":
        backend = "nccl" if accelerator == "cuda" else "gloo"
    return Machine(
        accelerator=accelerator,
        devices=int(devices),
        nodes=hardware.nodes,
        backend=backend,
        cores=usable_cores(),
        max_restarts=hardware.max_restarts,
        threads_setting=None if hardware.threads == "auto" else int(hardware.threads),
    )
