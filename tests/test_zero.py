"""zero's optimiser (ZeRO stage 1) in 2 gloo ranks: each rank keeps the momentum of its share of the parameters only,
its checkpointed state is that share, and a rank that loads it steps on exactly as the one that saved it (its
schedule's learning rate included)."""

import copy
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.runtime.process import Process
from parabench.strategies import zero
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup
from tests.test_ddp_equivalence import LR, WORLD, first_batch, make_data, make_model


def step_twice(rank: int, world_size: int, out: Path) -> None:
    """Two steps of SGD with momentum under a halving schedule; the second again from the state saved after the first,
    by a fresh model and optimiser; what each rank held and reached."""
    torch.set_num_threads(1)
    images, labels = make_data()
    process = Process(rank, rank, world_size, torch.device("cpu"))

    def built() -> tuple[torch.nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
        torch.manual_seed(0)
        parallel = zero.STRATEGY.apply(make_model(), process, cpu_setup(devices=world_size))
        optimizer = parallel.make_optimizer(
            lambda groups: torch.optim.SGD(groups, momentum=0.9), [{"params": list(parallel.module.parameters())}]
        )
        for group in optimizer.param_groups:
            group["lr"] = LR
        schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return parallel, optimizer, schedule

    def step(parallel, optimizer, schedule) -> None:
        mine = first_batch(parallel.shard_index, parallel.shard_count)
        optimizer.zero_grad()
        parallel.train_step(Batch(images[mine], labels[mine]), F.cross_entropy)
        optimizer.step()
        schedule.step()

    first = built()
    step(*first)
    saved = copy.deepcopy(  # state_dict() holds the live tensors, which the next step changes
        {"optimizer": first[1].state_dict(), "schedule": first[2].state_dict(), "model": first[0].model.state_dict()}
    )
    step(*first)
    second = built()
    second[0].model.load_state_dict(saved["model"])
    second[1].load_state_dict(saved["optimizer"])
    second[2].load_state_dict(saved["schedule"])
    step(*second)
    total = sum(1 for _ in first[0].model.parameters())
    torch.save(
        {
            "held": len(saved["optimizer"]["state"]),
            "total": total,
            "lr": second[1].param_groups[0]["lr"],
            "straight": first[0].model.state_dict(),
            "resumed": second[0].model.state_dict(),
        },
        out / f"rank{rank}.pt",
    )


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("zero")
    run_ranks(WORLD, step_twice, out)
    return [torch.load(out / f"rank{rank}.pt") for rank in range(WORLD)]


def test_each_rank_keeps_the_optimiser_state_of_its_share_only(ranks):
    held = [rank["held"] for rank in ranks]
    assert all(0 < count < ranks[0]["total"] for count in held), held
    assert sum(held) == ranks[0]["total"], "the shares cover every parameter once"


def test_a_rank_resumed_from_its_saved_share_steps_as_the_one_that_saved_it(ranks):
    for rank in ranks:
        assert rank["lr"] == pytest.approx(LR / 4), "the schedule's rate reached the shard after two steps"
        for name, tensor in rank["straight"].items():
            torch.testing.assert_close(rank["resumed"][name], tensor, rtol=0, atol=0, msg=name)
    for name, _ in make_model().named_parameters():  # BatchNorm's running statistics are each replica's own
        torch.testing.assert_close(ranks[1]["straight"][name], ranks[0]["straight"][name], rtol=0, atol=0, msg=name)
