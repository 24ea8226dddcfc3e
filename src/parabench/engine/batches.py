"""Which units each process trains on: the same global batches for every strategy, dealt out to replicas."""

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import torch
from torch.utils.data import DistributedSampler

from parabench.batch import Batch
from parabench.workloads import WorkloadData


def shard_batches(
    num_units: int, batch_per_replica: int, shard_index: int, shard_count: int, seed: int, epoch: int
) -> Iterator[torch.Tensor]:
    """Unit indices of this replica's part of each global batch in one epoch.

    DistributedSampler shuffles with the same seeded permutation on every process and deals it out
    round-robin, so the k-th batches of all replicas together are exactly the k-th global batch of a
    single process that uses batch_per_replica * shard_count: every strategy sees the same data, whether
    a unit is a sample or a whole episode.
    """
    sampler = DistributedSampler(
        range(num_units), num_replicas=shard_count, rank=shard_index, shuffle=True, seed=seed, drop_last=True
    )
    sampler.set_epoch(epoch)
    indices = torch.tensor(list(sampler))
    full_batches = len(indices) // batch_per_replica
    yield from indices[: full_batches * batch_per_replica].split(batch_per_replica)


def steps_per_epoch(num_units: int, global_batch: int) -> int:
    """Optimizer steps in one epoch (incomplete last batches are dropped)."""
    return num_units // global_batch


def epoch_batches(data: WorkloadData, global_batch: int, shard_index: int, shard_count: int, seed: int,
                  epoch: int) -> Iterator[Batch]:
    """This replica's batches of one epoch, assembled on the CPU one at a time as they are asked for, each unit
    with its own augmentation seed."""
    for indices in shard_batches(data.train_units, global_batch // shard_count, shard_index, shard_count, seed, epoch):
        yield replace(data.train_batch(epoch, indices), unit_seeds=unit_seeds(seed, epoch, indices))


def unit_seeds(seed: int, epoch: int, indices: torch.Tensor) -> torch.Tensor:
    """One seed per unit, a pure function of (run seed, epoch, unit index): a run repeats exactly, and a unit's
    augmentation does not depend on the replica, micro-batch or process count that trains it."""
    states = [np.random.SeedSequence([seed, epoch, int(index)]).generate_state(1, np.uint64)[0] for index in indices]
    return torch.tensor([int(state >> np.uint64(1)) for state in states], dtype=torch.int64)
