"""What processes of one job exchange: device sync before clocks, gathered and broadcast objects."""

from typing import TypeVar

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map_only

T = TypeVar("T")  # what every process contributes: the same type on each


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so a clock read after it sees the work done."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def gather_objects(value: T) -> list[T]:
    """Every process's `value`, in rank order (a one-item list when alone)."""
    if not dist.is_initialized():
        return [value]
    gathered: list[T] = [value] * dist.get_world_size()  # placeholders, each replaced by a rank's value
    dist.all_gather_object(gathered, value)
    return gathered


def gather_to_main(value: T) -> list[T] | None:
    """Every process's `value`, in rank order, on rank 0 only (None on the others; a one-item list when alone)."""
    if not dist.is_initialized():
        return [value]
    gathered: list[T] | None = [value] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(value, gathered, dst=0)
    return gathered


def on_cpu(value: T) -> T:
    """`value` with every tensor in it (through dicts, lists and tuples) on the CPU, to be gathered without landing
    on another process's device. A DTensor (fsdp's optimiser state) stays one: its shard moves, its mesh is kept,
    so that it loads back onto the same shards."""
    moved: T = tree_map_only(torch.Tensor, torch.Tensor.cpu, value)
    return moved


def broadcast_object(value: T) -> T:
    """Rank 0's `value`, on every process."""
    if not dist.is_initialized():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def slowest_per_step(durations: list[float]) -> list[float]:
    """Each step's time as the slowest process measured it: a parallel step ends when its last rank does."""
    return [max(step) for step in zip(*gather_objects(durations))]
