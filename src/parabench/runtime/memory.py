"""Peak memory of this process: allocated device memory on CUDA, resident set size on the CPU."""

import resource

import torch


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory in MiB since the process started (CUDA: tensors allocated on the device)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def memory_kind(device: torch.device) -> str:
    """What peak_memory_mb measures on this device."""
    return "cuda_max_allocated" if device.type == "cuda" else "cpu_max_rss"
