"""Which units each process trains on: the same global batches for every strategy, dealt out to replicas."""

from collections.abc import Iterator

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
    """This replica's batches of one epoch, assembled on the CPU one at a time as they are asked for."""
    for indices in shard_batches(data.train_units, global_batch // shard_count, shard_index, shard_count, seed, epoch):
        yield data.train_batch(epoch, indices)


def augmentation_generator(device: torch.device, seed: int, epoch: int, shard_index: int) -> torch.Generator:
    """The random stream of a replica's augmentations in one epoch: a run repeats exactly."""
    state = int(np.random.SeedSequence([seed, epoch, shard_index]).generate_state(1)[0])
    return torch.Generator(device=device).manual_seed(state)
