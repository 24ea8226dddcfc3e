"""Which samples each process trains on: the same global batches for every strategy, split among replicas."""

from collections.abc import Iterator

import torch
from torch.utils.data import DistributedSampler

from parabench.workloads import LabelledImages


def training_subset(data: LabelledImages, size: int | None, seed: int) -> LabelledImages:
    """A fixed, seeded random subset of `size` samples (all of them when size is None or too large)."""
    if size is None or size >= len(data):
        return data
    chosen = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))[:size]
    return LabelledImages(images=data.images[chosen], labels=data.labels[chosen])


def shard_batches(
    num_samples: int, batch_per_replica: int, shard_index: int, shard_count: int, seed: int, epoch: int
) -> Iterator[torch.Tensor]:
    """Sample indices of this replica's part of each global batch in one epoch.

    DistributedSampler shuffles with the same seeded permutation on every process and deals it out
    round-robin, so the k-th batches of all replicas together are exactly the k-th global batch of a
    single process that uses batch_per_replica * shard_count: every strategy sees the same data.
    """
    sampler = DistributedSampler(
        range(num_samples), num_replicas=shard_count, rank=shard_index, shuffle=True, seed=seed, drop_last=True
    )
    sampler.set_epoch(epoch)
    indices = torch.tensor(list(sampler))
    full_batches = len(indices) // batch_per_replica
    yield from indices[: full_batches * batch_per_replica].split(batch_per_replica)


def steps_per_epoch(num_samples: int, global_batch: int) -> int:
    """Optimizer steps in one epoch (incomplete last batches are dropped)."""
    return num_samples // global_batch
