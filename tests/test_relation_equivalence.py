"""One training step of the Relation Network under `single`, `ddp`, `allreduce` and `fsdp` (2 gloo ranks), episodes
split.

The unit is an episode: each replica takes one of the global batch's two episodes. As for the ResNet, BatchNorm
in training mode normalises each replica's own images, so we prove: with BatchNorm frozen, the three equal `single`
on both episodes; with BatchNorm training they equal `single` normalising each episode apart ("ghost batches"), and
differ from `single` on both at once. Tolerance: float32 parameters after one SGD step (lr 0.1) within rtol 1e-4,
atol 1e-6, as in the ResNet tests.
"""

from pathlib import Path

import pytest
import torch
from torch import Tensor, nn
from torch.distributed.tensor import DTensor

from parabench.batch import Batch
from parabench.engine.training import shard_batches
from parabench.models.relation import relation_network
from parabench.runtime.process import Process
from parabench.strategies.registry import STRATEGIES
from parabench.workloads.episodic import relation_loss
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup

WAYS, SHOTS, QUERIES, EPISODES, WORLD, LR = 3, 1, 2, 2, 2, 0.1
# fsdp shards each of the model's top-level PerImage blocks, whose output is a view: FSDP2 warns that an in-place op
# on it would skip the backward all-gather; none follows, which these steps prove.
DATA_PARALLEL = ("ddp", "allreduce", "fsdp")
RTOL, ATOL = 1e-4, 1e-6
State = dict[str, Tensor]


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return relation_network(WAYS, SHOTS, "conv4", width=8)


def make_episodes() -> Batch:
    generator = torch.Generator().manual_seed(1)
    images = torch.randn(EPISODES, WAYS * (SHOTS + QUERIES), 3, 84, 84, generator=generator)
    images[1] = images[1] * 3 + 1  # the episodes' statistics differ, as BatchNorm over one or both must show
    return Batch(images, torch.arange(WAYS).repeat_interleave(QUERIES).repeat(EPISODES, 1))


def shard(index: int, count: int) -> Tensor:
    return next(shard_batches(EPISODES, EPISODES // count, index, count, seed=3, epoch=0))


def parameters(model: nn.Module) -> State:
    """Every parameter whole: fsdp's shards are gathered (a collective: call it on every rank)."""
    return {
        name: (value.full_tensor() if isinstance(value, DTensor) else value).detach().clone()
        for name, value in model.named_parameters()
    }


def sgd_step(model: nn.Module, step) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    optimizer.zero_grad()
    step()
    optimizer.step()


def single_step(batchnorm_training: bool, ghost: bool) -> State:
    """`single` on both episodes, normalising them together or each apart."""
    model, episodes = make_model().train(batchnorm_training), make_episodes()
    parts = [shard(r, WORLD) for r in range(WORLD)] if ghost else [shard(0, 1)]

    def step() -> None:
        losses = [relation_loss(model(episodes.inputs[part]), episodes.targets[part]) for part in parts]
        (sum(losses) / len(losses)).backward()

    sgd_step(model, step)
    return parameters(model)


def rank_steps(rank: int, world_size: int, batchnorm_training: bool, out: Path) -> None:
    torch.set_num_threads(1)
    episodes, results = make_episodes(), {}
    for name in DATA_PARALLEL:
        process = Process(rank, rank, world_size, torch.device("cpu"))
        parallel = STRATEGIES[name].apply(make_model(), process, cpu_setup(devices=WORLD, blocks=8))
        parallel.module.train(batchnorm_training)
        mine = shard(parallel.shard_index, parallel.shard_count)
        batch = Batch(episodes.inputs[mine], episodes.targets[mine])
        sgd_step(parallel.module, lambda parallel=parallel, batch=batch: parallel.train_step(batch, relation_loss))
        results[name] = parameters(parallel.model)
    torch.save(results, out / f"rank{rank}.pt")


def run(tmp_path: Path, batchnorm_training: bool) -> list[dict[str, State]]:
    run_ranks(WORLD, rank_steps, batchnorm_training, tmp_path)
    return [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD)]


def assert_same(a: State, b: State) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=RTOL, atol=ATOL, msg=lambda m, name=name: f"{name}: {m}")


def max_difference(a: State, b: State) -> float:
    return max((a[name] - b[name]).abs().max().item() for name in a)


def test_each_replica_takes_whole_episodes():
    halves = [shard(rank, WORLD).tolist() for rank in range(WORLD)]
    assert sorted(halves[0] + halves[1]) == sorted(shard(0, 1).tolist()) and len(halves[0]) == 1


@pytest.mark.slow
def test_data_parallel_strategies_equal_single_with_frozen_batchnorm(tmp_path):
    reference = single_step(batchnorm_training=False, ghost=False)
    assert max_difference(reference, parameters(make_model())) > 1e-4, "the step changed nothing"
    for rank in run(tmp_path, batchnorm_training=False):
        for name in DATA_PARALLEL:
            assert_same(rank[name], reference)


@pytest.mark.slow
def test_with_training_batchnorm_they_equal_ghost_batches(tmp_path):
    ghost, together = single_step(True, ghost=True), single_step(True, ghost=False)
    for rank in run(tmp_path, batchnorm_training=True):
        for name in DATA_PARALLEL:
            assert_same(rank[name], ghost)
            assert max_difference(rank[name], together) > 100 * ATOL, "per-replica BatchNorm should differ"
