"""params.yaml's `hardware` section and its resolution against the machine at hand (auto values become numbers)."""

import functools
import logging
from typing import Annotated, Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, PlainValidator

from parabench.runtime.cpu import usable_cores
from parabench.runtime.gpu_signs import gpu_signs

CPU_DEFAULT_DEVICES = 2

log = logging.getLogger("parabench.hardware")


def _auto_or_positive_int(value: Any) -> int | str:
    if value == "auto":
        return "auto"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ValueError("must be 'auto' or a whole number >= 1")


AutoOrPositiveInt = Annotated[int | str, PlainValidator(_auto_or_positive_int)]


class Hardware(BaseModel):
    """Where and how wide to run, as params.yaml says it: `auto` values are resolved by `resolve`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accelerator: Literal["auto", "cpu", "cuda"]
    devices: AutoOrPositiveInt
    nodes: Annotated[int, Field(ge=1)]
    threads: AutoOrPositiveInt
    backend: Literal["auto", "gloo", "nccl"]
    max_restarts: Annotated[int, Field(ge=0)]
    oversubscribe: bool  # allow more worker processes per node than CPU cores
    timeout_s: Annotated[float, Field(gt=0)]  # a collective that waits longer fails: a hung or lost rank
    rendezvous: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-]+:[0-9]{1,5}$")] | None  # host:port, nodes > 1
    join_timeout_s: Annotated[float, Field(gt=0)]  # how long the nodes have to arrive at the rendezvous


class Machine(BaseModel):
    """Concrete hardware: accelerator, devices per node, nodes, backend, cores, restarts, the threads setting."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accelerator: Literal["cpu", "cuda"]
    devices: int
    nodes: int
    backend: Literal["gloo", "nccl"]
    cores: int
    max_restarts: int
    threads_setting: int | None
    timeout_s: float = 600.0
    rendezvous: str | None = None
    join_timeout_s: float = 600.0

    def threads_per_process(self, processes_per_node: int) -> int:
        """Threads each process may use: the setting, or this node's cores shared evenly."""
        if self.threads_setting is not None:
            return self.threads_setting
        return max(1, self.cores // processes_per_node)


@functools.cache
def warn_of_unused_gpus() -> None:
    """Say loudly, once per process, when `accelerator: auto` falls back to the CPU on a node that shows GPUs: what
    was seen and what to do."""
    signs = gpu_signs()
    if not signs:
        return
    log.warning(
        "hardware.accelerator: auto trains on the CPU: the installed torch %s (CUDA build: %s) cannot use this "
        "node's GPUs, yet the node shows them (%s). Every timing of this run is a CPU timing. Install a torch build "
        "whose CUDA version the NVIDIA driver supports (nvidia-smi prints the highest it supports), or set "
        "hardware.accelerator: cpu to silence this, or cuda to make it an error.",
        torch.__version__,
        torch.version.cuda or "none, a CPU-only build",
        "; ".join(signs),
    )


def resolve(hardware: Hardware) -> Machine:
    """Turn `auto` into numbers: cuda if present, its GPU count as devices, nccl on cuda and gloo on cpu.

    An `auto` that falls back to the CPU on a node that shows GPUs warns (see `warn_of_unused_gpus`)."""
    accelerator = hardware.accelerator
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.is_available() else "cpu"
        if accelerator == "cpu":
            warn_of_unused_gpus()
    devices = hardware.devices
    if devices == "auto":
        devices = torch.cuda.device_count() if accelerator == "cuda" else CPU_DEFAULT_DEVICES
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
        timeout_s=hardware.timeout_s,
        rendezvous=hardware.rendezvous,
        join_timeout_s=hardware.join_timeout_s,
    )
