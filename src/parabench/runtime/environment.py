"""The environment recorded beside every number: versions, devices, backend, processes, threads."""

import platform
from typing import Any

import torch

from parabench.engine.plan import RunPlan


def cpu_name() -> str:
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(plan: RunPlan) -> dict[str, Any]:
    """Everything about the machine and launch that a timing depends on."""
    machine = plan.machine
    if machine.accelerator == "cuda":
        devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    else:
        devices = [cpu_name()]
    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "accelerator": machine.accelerator,
        "device_names": devices,
        "backend": machine.backend if plan.distributed else "none",
        "nodes": machine.nodes,
        "processes": plan.processes,
        "threads_per_process": plan.threads,
        "cores": machine.cores,
    }
