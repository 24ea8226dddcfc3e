"""What processes of one job exchange: device sync before clocks, gathered and broadcast objects."""

import torch
import torch.distributed as dist
from torch.utils._pytree import tree_map_only


def synchronize(device: torch.device) -> None:
    """Wait for queued device work, so a clock read after it sees the work done."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def gather_objects(value: object) -> list[object]:
    """Every process's `value`, in rank order (a one-item list when alone)."""
    if not dist.is_initialized():
        return [value]
    gathered: list[object] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def gather_to_main(value: object) -> list[object] | None:
    """Every process's `value`, in rank order, on rank 0 only (None on the others; a one-item list when alone)."""
    if not dist.is_initialized():
        return [value]
    gathered: list[object] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(value, gathered, dst=0)
    return gathered


def on_cpu(value: object) -> object:
    """`value` with every tensor in it (through dicts, lists and tuples) on the CPU, to be gathered without landing
    on another process's device. A DTensor (fsdp's optimiser state) stays one: its shard moves, its mesh is kept,
    so that it loads back onto the same shards."""
    return tree_map_only(torch.Tensor, torch.Tensor.cpu, value)


def broadcast_object(value: object) -> object:
    """Rank 0's `value`, on every process."""
    if not dist.is_initialized():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def slowest_per_step(durations: list[float]) -> list[float]:
    """Each step's time as the slowest process measured it: a parallel step ends when its last rank does."""
    return [max(step) for step in zip(*gather_objects(durations))]  # type: ignore[call-overload]
