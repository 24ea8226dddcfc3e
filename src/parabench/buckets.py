"""How data parallelism groups a model's gradients into buckets, one all-reduce each: DDP's rule and the hand-written
allreduce's, over each gradient's bytes in the order the model registers its parameters.

DDP (its C++ Reducer, buckets rebuilt after the first step) takes the gradients in the order backward makes them,
roughly the reverse of the model's, and closes a bucket once it reaches its cap: the first at 1 MiB, so that the
first all-reduce starts early in the backward pass, every other at 25 MiB (bucket_cap_mb). So a bucket holds its cap
and part of a tensor more: ResNet-18's 44.7 MB go in three buckets, not the two that 25 MiB each would make. The
hand-written allreduce takes them in the model's order after backward and closes a bucket before it would pass 25 MiB
(one tensor larger than that is a bucket of its own).
"""

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

BUCKET_BYTES = 25 * 1024 * 1024  # DDP's default bucket_cap_mb; the hand-written allreduce caps its buckets alike
DDP_FIRST_BUCKET_BYTES = 1024 * 1024  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


def ddp_buckets(gradient_bytes: Sequence[int]) -> list[int]:
    """The bytes of each bucket DDP all-reduces, in the order it reduces them (the last holds the model's first
    layers, whose gradients come last)."""
    buckets, filled, cap = [], 0, DDP_FIRST_BUCKET_BYTES
    for size in reversed(gradient_bytes):
        filled += size
        if filled >= cap:
            buckets.append(filled)
            filled, cap = 0, BUCKET_BYTES
    return [*buckets, filled] if filled else buckets


def capped_counts(gradient_bytes: Sequence[int]) -> list[int]:
    """How many consecutive gradients each of the hand-written allreduce's buckets holds: at most BUCKET_BYTES, or
    one larger gradient alone."""
    counts: list[int] = []
    filled = 0
    for size in gradient_bytes:
        if not counts or (filled + size > BUCKET_BYTES and filled > 0):
            counts.append(0)
            filled = 0
        counts[-1] += 1
        filled += size
    return counts


def capped_groups(items: Sequence[T], item_bytes: Sequence[int]) -> list[list[T]]:
    """`items` (gradients, or their sizes), of `item_bytes` each, in the consecutive groups capped_counts makes."""
    groups, start = [], 0
    for count in capped_counts(item_bytes):
        groups.append(list(items[start : start + count]))
        start += count
    return groups


def allreduce_buckets(gradient_bytes: Sequence[int]) -> list[int]:
    """The bytes of each of the hand-written allreduce's buckets, in the order it reduces them."""
    return [sum(bucket) for bucket in capped_groups(gradient_bytes, gradient_bytes)]
