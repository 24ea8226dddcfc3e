"""Peak memory of a process's training steps on each device it uses, its counter reset before the steps and read
after them, so model setup, evaluation and a warm worker's earlier cells stay out: allocated memory on CUDA, the
resident set's high-water mark on the CPU (Linux resets it through /proc/self/clear_refs; where it cannot, the
process's whole life counts, and memory_kind says so)."""

import resource
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import torch

from parabench.runtime.libc import LIBC

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
HEAP_ALLOCATION_LIMIT = 1 << 30  # allocations up to 1 GiB come from the heap, not from a mapping of their own
CLEAR_REFS = Path("/proc/self/clear_refs")  # writing "5" resets VmHWM to the current resident set (Linux 4.0+)
STATUS = Path("/proc/self/status")


def keep_freed_memory() -> None:
    """glibc's malloc serves every allocation up to HEAP_ALLOCATION_LIMIT from its heap and keeps what is freed there
    for the next step (release_free_heap hands it back between cells).

    By default glibc maps each allocation above a threshold of its own (adapting up to 32 MiB) and unmaps it when
    freed, so every training step faults its large tensors' pages in again, and two processes running the same steps
    differ by how far each one's threshold has adapted (docs/reference-figures.md: a 40 MB tensor allocated again
    cost 530 page faults a step).
    PyTorch's CPU tuning guide gives the same advice with jemalloc or tcmalloc; glibc's own settings need no install.
    """
    if LIBC is not None and hasattr(LIBC, "mallopt"):
        LIBC.mallopt(M_MMAP_THRESHOLD, HEAP_ALLOCATION_LIMIT)
        LIBC.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


def release_free_heap() -> None:
    """glibc's malloc_trim(0): the free memory that earlier work left in the heap goes back to the system, so that
    what runs next allocates as a fresh process would (elsewhere nothing)."""
    if LIBC is not None and hasattr(LIBC, "malloc_trim"):
        LIBC.malloc_trim(0)


def _status_kib(field: str) -> int | None:
    """A field of /proc/self/status in KiB (VmHWM, VmRSS), where /proc tells it."""
    try:
        lines = STATUS.read_text().splitlines()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in lines if line.startswith(f"{field}:")), None)


def devices_of(device: torch.device) -> list[torch.device]:
    """Every device a process on `device` may hold memory on: each visible GPU, or the CPU."""
    if device.type == "cuda":
        return [torch.device("cuda", index) for index in range(torch.cuda.device_count())]
    return [device]


def memory_now_mb(devices: Sequence[torch.device]) -> dict[str, float]:
    """The memory held now on each device, in MiB (CUDA: tensors allocated; CPU: the resident set)."""
    return {
        str(device): (
            torch.cuda.memory_allocated(device) / 2**20
            if device.type == "cuda"
            else (_status_kib("VmRSS") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 2**10
        )
        for device in devices
    }


def _cpu_peak_resettable() -> bool:
    """Whether this process can reset its resident set's high-water mark."""
    return CLEAR_REFS.exists() and _status_kib("VmHWM") is not None


def reset_peak(device: torch.device) -> None:
    """Start counting the peak on `device` anew."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    elif _cpu_peak_resettable():
        CLEAR_REFS.write_text("5")


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory in MiB on `device` since its last reset (CUDA: tensors allocated; CPU: the resident set's peak)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    kib = _status_kib("VmHWM") if _cpu_peak_resettable() else None
    return (kib if kib is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) / 2**10


def memory_kind(device: torch.device) -> str:
    """What peak_memory_mb measures on this device."""
    if device.type == "cuda":
        return "cuda_max_allocated"
    return "cpu_peak_rss" if _cpu_peak_resettable() else "cpu_max_rss_since_start"


class StepMemory:
    """The highest peak of every device over the passes measured: `reset()` before a pass, `read()` after it."""

    def __init__(self, devices: Sequence[torch.device]):
        self.devices = tuple(dict.fromkeys(devices))
        self.peaks_mb: dict[str, float] = {}

    def reset(self) -> None:
        """Start counting anew on every device."""
        for device in self.devices:
            reset_peak(device)

    def read(self) -> None:
        """Keep each device's peak since the last reset, where it beats the passes before."""
        for device in self.devices:
            self.peaks_mb[str(device)] = max(self.peaks_mb.get(str(device), 0.0), peak_memory_mb(device))


class SavedForBackward:
    """Within it, the bytes autograd keeps for backward: the memory of every tensor a forward saves, each storage
    counted once however many operations save it or views of it, the parameters left out (they live on anyway). The
    activation memory that checkpointing and lower precision shrink, counted alike on a CPU, where the process's
    peak RSS holds its data and libraries too, and on a GPU. Storages are told apart by address: a pipeline's
    micro-batches, all held at once, add up; under gradient accumulation a forward that reuses the memory the last
    micro-batch's backward freed counts it once, so about one micro-batch's is counted."""

    def __init__(self) -> None:
        self._storage_bytes: dict[int, int] = {}
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda tensor: tensor)

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        owner = tensor if tensor._base is None else tensor._base  # a weight is often saved as a view (Linear: w.t())
        if not (owner.is_leaf and owner.requires_grad):  # a parameter (or an input asking for its gradient)
            storage = tensor.untyped_storage()  # the graph holds the tensor, so no other storage takes its address
            self._storage_bytes[storage.data_ptr()] = storage.nbytes()
        return tensor

    def __enter__(self) -> "SavedForBackward":
        self._hooks.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._hooks.__exit__(kind, error, trace)

    @property
    def bytes(self) -> int:
        """The bytes counted."""
        return sum(self._storage_bytes.values())

    @property
    def mb(self) -> float:
        """The bytes counted, in MiB."""
        return self.bytes / 2**20


def per_rank(peaks: list[dict[str, float]]) -> dict[str, float]:
    """Every rank's peaks in one mapping: `rank<r>` for a rank on one device, `rank<r> <device>` for each of several."""
    return {
        (f"rank{rank}" if len(devices) == 1 else f"rank{rank} {device}"): round(mb, 1)
        for rank, devices in enumerate(peaks)
        for device, mb in devices.items()
    }
