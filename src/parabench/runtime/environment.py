"""The environment recorded beside every number: versions, CPU model and vector ISA, devices, backend, threads."""

import platform
from typing import Any

import torch

from parabench.runtime.hardware import Machine, usable_cores


def cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The vector extensions the CPU reports (AVX2, AVX-512 and friends), from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return sorted(flag for flag in line.split(":", 1)[1].split() if flag.startswith(("avx", "amx")))
    except OSError:
        pass
    return []


def machine_identity() -> dict[str, Any]:
    """What makes timings on this machine comparable: the same identity means the same hardware and software."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_vector_flags": cpu_flags(),
        "cores": usable_cores(),
        "gpus": gpus,
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def describe(machine: Machine, processes: int, threads: int, distributed: bool) -> dict[str, Any]:
    """The machine's identity plus how this run used it: accelerator, backend, processes, threads."""
    return {
        **machine_identity(),
        "accelerator": machine.accelerator,
        "backend": machine.backend if distributed else "none",
        "nodes": machine.nodes if distributed else 1,
        "processes": processes,
        "threads_per_process": threads,
    }
