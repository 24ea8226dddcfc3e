"""The environment recorded beside every number: versions, CPU model and vector ISA, devices, backend, threads."""

import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from parabench.runtime.cpu import cpu_flags, cpu_model, usable_cores
from parabench.runtime.gpu_signs import gpu_signs, nvidia_driver_version
from parabench.runtime.hardware import Machine


def gpu_names() -> list[str]:
    """The names of the GPUs torch can use, in device order."""
    return [torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count())]


def gpus() -> list[dict[str, Any]]:
    """Each GPU torch can use: its name, compute capability (major.minor) and memory in bytes."""
    return [
        {
            "name": torch.cuda.get_device_name(index),
            "compute_capability": "{}.{}".format(*torch.cuda.get_device_capability(index)),
            "memory_bytes": torch.cuda.get_device_properties(index).total_memory,
        }
        for index in range(torch.cuda.device_count())
    ]


def cudnn_version() -> int | None:
    """cuDNN's version number as torch reports it (like 91002), or None where CUDA is not in use."""
    return torch.backends.cudnn.version() if torch.cuda.is_available() and torch.backends.cudnn.is_available() else None


def nccl_version() -> str | None:
    """NCCL's version (like 2.27.5), or None where CUDA is not in use."""
    return ".".join(str(part) for part in torch.cuda.nccl.version()[:3]) if torch.cuda.is_available() else None


def gpus_torch_cannot_use() -> list[str]:
    """The signs of GPUs on this node when torch can use none of them (a CPU-only build, a driver too old)."""
    return [] if torch.cuda.is_available() else gpu_signs()


def tf32_setting(read: Callable[[], Any]) -> Any:
    """A TF32 setting of torch's older API, or None where torch refuses to read it (set with fp32_precision)."""
    try:
        return read()
    except RuntimeError:
        return None


def reproducibility_settings() -> dict[str, Any]:
    """The settings that decide whether a CUDA run repeats bit for bit: TF32, deterministic kernels, autotuning."""
    return {
        "matmul_allow_tf32": tf32_setting(lambda: torch.backends.cuda.matmul.allow_tf32),
        "cudnn_allow_tf32": tf32_setting(lambda: torch.backends.cudnn.allow_tf32),
        "float32_matmul_precision": tf32_setting(torch.get_float32_matmul_precision),
        "matmul_fp32_precision": torch.backends.cuda.matmul.fp32_precision,
        "cudnn_conv_fp32_precision": torch.backends.cudnn.conv.fp32_precision,  # type: ignore[attr-defined]  # not in torch's stubs
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    }


def allocator() -> str:
    """The memory allocator the processes run with: what LD_PRELOAD puts before glibc's malloc (tcmalloc, jemalloc, as
    PyTorch's CPU tuning guide suggests), else glibc. It moves step times by 10% or more here
    (docs/reference-figures.md)."""
    preloaded = [Path(library).name for library in os.environ.get("LD_PRELOAD", "").replace(":", " ").split()]
    return ", ".join(preloaded) or "glibc"


def machine_identity() -> dict[str, Any]:
    """What makes timings on this machine comparable: the same identity means the same hardware and software."""
    return {
        "cpu_model": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_vector_flags": cpu_flags(),
        "cores": usable_cores(),
        "gpus": gpus(),
        "gpus_torch_cannot_use": gpus_torch_cannot_use(),
        "nvidia_driver": nvidia_driver_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "none",
        "cudnn": cudnn_version(),
        "nccl": nccl_version(),
        "reproducibility": reproducibility_settings(),
        "allocator": allocator(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def machine_line(identity: dict[str, Any]) -> str:
    """A machine_identity() in a line, for a figure's title or a page's header: CPU model and vector ISA, cores,
    GPUs, torch and CUDA versions."""
    gpu_names = [gpu["name"] for gpu in identity["gpus"]]
    gpu_text = f"{len(gpu_names)} x {gpu_names[0]}" if len(set(gpu_names)) == 1 else ", ".join(gpu_names) or "no GPU"
    return (
        f"{identity['cpu_model']} ({identity['cpu_capability']}), {identity['cores']} cores, {gpu_text}, "
        f"torch {identity['torch']}, CUDA {identity['cuda']}"
    )


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
