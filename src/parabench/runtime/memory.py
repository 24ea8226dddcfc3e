"""Peak memory of a process's training steps on each device it uses: allocated memory on CUDA (its counter reset
before the steps and read after them, so model setup and evaluation stay out), resident set size on the CPU (the
process's whole life: it cannot be reset)."""

import resource
from collections.abc import Sequence

import torch


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory in MiB on `device` since its last reset (CUDA: tensors allocated; CPU: the process's max RSS)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def memory_kind(device: torch.device) -> str:
    """What peak_memory_mb measures on this device."""
    return "cuda_max_allocated" if device.type == "cuda" else "cpu_max_rss"


class StepMemory:
    """The highest peak of every device over the passes measured: `reset()` before a pass, `read()` after it."""

    def __init__(self, devices: Sequence[torch.device]):
        self.devices = tuple(dict.fromkeys(devices))
        self.peaks_mb: dict[str, float] = {}

    def reset(self) -> None:
        """Start counting anew on every CUDA device (the CPU's RSS keeps its peak)."""
        for device in self.devices:
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)

    def read(self) -> None:
        """Keep each device's peak since the last reset, where it beats the passes before."""
        for device in self.devices:
            self.peaks_mb[str(device)] = max(self.peaks_mb.get(str(device), 0.0), peak_memory_mb(device))


def per_rank(peaks: list[dict[str, float]]) -> dict[str, float]:
    """Every rank's peaks in one mapping: `rank<r>` for a rank on one device, `rank<r> <device>` for each of several."""
    return {(f"rank{rank}" if len(devices) == 1 else f"rank{rank} {device}"): round(mb, 1)
            for rank, devices in enumerate(peaks) for device, mb in devices.items()}
