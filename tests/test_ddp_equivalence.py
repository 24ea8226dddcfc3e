"""DDP equivalence: 2 gloo ranks, each on its half of a global batch, against `single` on the whole batch.

BatchNorm, honestly: in training mode each DDP replica normalises with the statistics of its own half
batch (as nn.DataParallel does), so DDP is *not* the same computation as one process on the whole
batch. We therefore prove two exact statements instead of one vague one:
  1. with BatchNorm frozen (eval mode, running statistics), DDP equals `single` on the whole batch;
  2. with BatchNorm training, DDP equals `single` computing each half batch's statistics separately
     ("ghost batches"), and differs measurably from `single` on the whole batch.
Tolerance: float32 parameters after one SGD step (lr 0.1) agree within rtol 1e-4, atol 1e-6; only the
summation order of the gradient average differs.
"""

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from parabench.engine.training import shard_batches
from parabench.models.d2l_resnet18 import d2l_resnet18
from parabench.runtime.process import Process
from parabench.strategies.registry import STRATEGIES
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup

GLOBAL_BATCH, SAMPLES, WORLD, LR = 8, 16, 2, 0.1
RTOL, ATOL = 1e-4, 1e-6


def make_data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.rand(SAMPLES, 1, 12, 12, generator=generator), torch.randint(0, 10, (SAMPLES,), generator=generator)


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return d2l_resnet18(10, in_channels=1, width=4)


def sgd_step(model: nn.Module, losses: list[torch.Tensor]) -> None:
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    optimizer.zero_grad()
    (sum(losses) / len(losses)).backward()
    optimizer.step()


def first_batch(shard_index: int, shard_count: int) -> torch.Tensor:
    return next(shard_batches(SAMPLES, GLOBAL_BATCH // shard_count, shard_index, shard_count, seed=3, epoch=0))


def ddp_rank(rank: int, world_size: int, batchnorm_training: bool, out: Path) -> None:
    torch.set_num_threads(1)
    images, labels = make_data()
    process = Process(rank, rank, world_size, torch.device("cpu"))
    parallel = STRATEGIES["ddp"].apply(make_model(), process, cpu_setup(devices=WORLD))
    parallel.module.train(batchnorm_training)
    mine = first_batch(parallel.shard_index, parallel.shard_count)
    sgd_step(parallel.module, [F.cross_entropy(parallel.module(images[mine]), labels[mine])])
    state = parallel.full_state_dict()
    torch.save({name: state[name].clone() for name, _ in make_model().named_parameters()}, out / f"rank{rank}.pt")


def single_step(batchnorm_training: bool, ghost_batches: int) -> dict[str, torch.Tensor]:
    """One step of one process on the whole first batch, normalising `ghost_batches` parts separately.

    The parts are the replicas' shards, so ghost_batches=WORLD reproduces what each replica's BatchNorm sees.
    """
    images, labels = make_data()
    model = make_model().train(batchnorm_training)
    parts = [first_batch(0, 1)] if ghost_batches == 1 else [first_batch(r, ghost_batches) for r in range(ghost_batches)]
    losses = [F.cross_entropy(model(images[part]), labels[part]) for part in parts]
    sgd_step(model, losses)
    return {k: v.detach() for k, v in model.named_parameters()}


def ddp_parameters(tmp_path: Path, batchnorm_training: bool) -> list[dict[str, torch.Tensor]]:
    run_ranks(WORLD, ddp_rank, batchnorm_training, tmp_path)
    return [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD)]


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max((a[name] - b[name]).abs().max().item() for name in a)


def assert_same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=RTOL, atol=ATOL, msg=lambda m, name=name: f"{name}: {m}")


def test_shards_of_a_global_batch_are_the_single_batch():
    halves = [first_batch(rank, WORLD) for rank in range(WORLD)]
    assert sorted(torch.cat(halves).tolist()) == sorted(first_batch(0, 1).tolist())
    assert set(halves[0].tolist()).isdisjoint(halves[1].tolist())


@pytest.mark.slow
def test_ddp_equals_single_with_frozen_batchnorm(tmp_path):
    ranks = ddp_parameters(tmp_path, batchnorm_training=False)
    reference = single_step(batchnorm_training=False, ghost_batches=1)
    assert max_difference(ranks[0], make_model().state_dict()) > 1e-3, "the step changed nothing"
    assert_same(ranks[0], reference)
    assert_same(ranks[1], reference)


@pytest.mark.slow
def test_ddp_with_training_batchnorm_equals_ghost_batches(tmp_path):
    ranks = ddp_parameters(tmp_path, batchnorm_training=True)
    assert_same(ranks[0], single_step(batchnorm_training=True, ghost_batches=WORLD))
    assert_same(ranks[1], ranks[0])
    whole_batch = single_step(batchnorm_training=True, ghost_batches=1)
    assert max_difference(ranks[0], whole_batch) > 100 * ATOL, "per-replica BatchNorm should differ"
