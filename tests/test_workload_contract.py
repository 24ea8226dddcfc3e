"""The workload contract on a toy workload defined here: a new workload runs under the engine with no change to it.

The toy is not a classifier and has no images: each unit is a set of 4 points in 3-D, the target is a number
computed from the set, the loss is MSE, the tally an absolute error, the optimiser Adam with the head at 10x
the learning rate and a StepLR schedule, evaluation a mean absolute error. It trains under `single` and under
`ddp` on 2 gloo ranks, which must end with the same parameters (no BatchNorm here, so replicas computing their
halves of each global batch do exactly what one process does on the whole batch, up to float summation order).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pytest
import torch
from pydantic import Field
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.engine.plan import RunPlan
from parabench.engine.training import build_trainer, fit
from parabench.runtime.process import Process
from parabench.strategies.registry import STRATEGIES
from parabench.workloads import WORKLOADS, TrainSettings, Workload, WorkloadData
from parabench.workloads.contract import ParamGroup
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup

SET_SIZE, DIMS = 4, 3


class SetSettings(TrainSettings):
    """The toy's own setting: the head's learning-rate multiplier."""

    head_lr_mult: Annotated[float, Field(gt=0)]


class SumOverItems(nn.Module):
    """(E, S, C) -> (E, C): a set's features summed over its items."""

    def forward(self, x: Tensor) -> Tensor:
        return x.sum(dim=1)


@dataclass(frozen=True)
class SetData(WorkloadData):
    """Seeded synthetic sets and their targets: the sum of every coordinate of the set."""

    unit = "set"
    score_name = "mae"
    points: Tensor
    targets: Tensor
    test_points: Tensor
    test_targets: Tensor

    @property
    def train_units(self) -> int:
        return len(self.targets)

    @property
    def data_origin(self) -> str:
        return "synthetic sets generated in the test"

    def train_batch(self, epoch: int, indices: Tensor) -> Batch:
        return Batch(self.points[indices], self.targets[indices])

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return F.mse_loss(outputs, targets)

    def tally(self, outputs: Tensor, targets: Tensor) -> dict[str, Tensor]:
        return {"abs_error": (outputs - targets).abs().sum()}

    @torch.no_grad()
    def item_scores(self, model: nn.Module, split: str, device: torch.device) -> Tensor:
        outputs = model.eval()(self.test_points.to(device)).cpu()
        return (outputs - self.test_targets).abs()


def make_sets(count: int, seed: int) -> tuple[Tensor, Tensor]:
    generator = torch.Generator().manual_seed(seed)
    points = torch.randn(count, SET_SIZE, DIMS, generator=generator)
    return points, points.sum(dim=(1, 2))


class SetRegression(Workload):
    """Regress a number from a set of points: no images, no labels, no argmax."""

    name = "toy_sets"
    dataset = None
    settings_model = SetSettings
    primary_metric = "test_mae"

    def build_model(self, settings: SetSettings) -> nn.Sequential:
        return nn.Sequential(
            nn.Sequential(nn.Linear(DIMS, 16), nn.Tanh()),
            SumOverItems(),
            nn.Sequential(nn.Linear(16, 16), nn.Tanh()),
            nn.Sequential(nn.Linear(16, 1), nn.Flatten(0)),
        )

    def unit_shape(self, settings: SetSettings) -> tuple[int, ...]:
        return (SET_SIZE, DIMS)

    def param_groups(self, named_parameters, settings: SetSettings) -> list[ParamGroup]:
        named = list(named_parameters)
        head = [parameter for name, parameter in named if name.startswith("3.")]
        body = [parameter for name, parameter in named if not name.startswith("3.")]
        return [ParamGroup(body), ParamGroup(head, lr_scale=settings.head_lr_mult)]

    def optimizer(self, groups: list[dict], settings: SetSettings) -> torch.optim.Optimizer:
        return torch.optim.Adam(groups)

    def lr_schedule(self, optimizer, settings: SetSettings, steps_per_epoch: int):
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)

    def open(self, prepared: Path | None, settings: SetSettings) -> SetData:
        assert prepared is None, "synthetic: no dataset stages"
        return SetData(*make_sets(64, settings.seed), *make_sets(64, settings.seed + 1))


TOY = SetRegression()


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(WORKLOADS, TOY.name, TOY)


def toy_plan(strategy: str, epochs: int = 3) -> RunPlan:
    setup = cpu_setup(devices=2, blocks=4, batch_shape=(16, SET_SIZE, DIMS))
    settings = SetSettings(
        epochs=epochs, batch_size=16, lr=0.01, scaling="strong", warmup_steps=1, seed=0, head_lr_mult=10.0
    )
    return RunPlan(
        role="train",
        workload_name=TOY.name,
        strategy_name=strategy,
        dataset=None,
        scale="tiny",
        settings=settings,
        setup=setup,
        replicas=STRATEGIES[strategy].data_replicas(setup),
        global_batch=16,
        lr=0.01,
    )


def train_rank(rank: int, world_size: int, strategy: str, out: Path) -> None:
    WORKLOADS[TOY.name] = TOY  # a spawned process imports the registry afresh
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu")) if world_size > 1 else CPU_PROCESS
    plan = toy_plan(strategy)
    result = fit(plan, process, TOY.open(None, plan.settings), out / f"{strategy}.ckpt", "test data")
    if process.is_main:
        torch.save({"state": result.state_dict, "history": result.history}, out / f"{strategy}.pt")


def test_a_new_workload_trains_with_its_own_loss_tally_optimiser_and_schedule(tmp_path):
    train_rank(0, 1, "single", tmp_path)
    history = torch.load(tmp_path / "single.pt")["history"]
    assert list(history[0]) == [
        "epoch",
        "train_loss",
        "train_abs_error",
        "test_mae",
        "test_mae_ci95",
        "step_time_s",
        "units_per_s",
        "other_cpu_share",
    ]
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["test_mae"] < history[0]["test_mae"]


def test_parameter_groups_and_schedule_come_from_the_workload():
    trainer = build_trainer(toy_plan("single"), CPU_PROCESS, steps_per_epoch=1)
    assert [group["lr"] for group in trainer.optimizer.param_groups] == [0.01, pytest.approx(0.1)]
    assert isinstance(trainer.optimizer, torch.optim.Adam)
    for _ in range(3):
        trainer.optimizer.step()
        trainer.schedule.step()
    assert [group["lr"] for group in trainer.optimizer.param_groups] == [0.005, pytest.approx(0.05)]


def test_resume_restores_the_optimiser_and_the_schedule(tmp_path):
    straight = fit(
        toy_plan("single", epochs=2),
        CPU_PROCESS,
        TOY.open(None, toy_plan("single").settings),
        tmp_path / "straight.ckpt",
        "test data",
    )
    fit(
        toy_plan("single", epochs=1),
        CPU_PROCESS,
        TOY.open(None, toy_plan("single").settings),
        tmp_path / "crash.ckpt",
        "test data",
    )
    resumed = fit(
        toy_plan("single", epochs=2),
        CPU_PROCESS,
        TOY.open(None, toy_plan("single").settings),
        tmp_path / "crash.ckpt",
        "test data",
    )
    assert resumed.resumed_after_epoch == 1
    for name, value in straight.state_dict.items():
        torch.testing.assert_close(resumed.state_dict[name], value, rtol=0, atol=0)


@pytest.mark.slow
def test_ddp_on_two_ranks_equals_single(tmp_path):
    """Tolerance: float32 after 12 Adam steps, only the gradient average's summation order differs: 1e-5."""
    train_rank(0, 1, "single", tmp_path)
    run_ranks(2, train_rank, "ddp", tmp_path)
    single, ddp = (torch.load(tmp_path / f"{name}.pt")["state"] for name in ("single", "ddp"))
    assert list(single) == list(ddp)
    for name in single:
        torch.testing.assert_close(
            ddp[name], single[name], rtol=1e-5, atol=1e-5, msg=lambda m, name=name: f"{name}: {m}"
        )
    assert torch.load(tmp_path / "ddp.pt")["history"][-1]["train_loss"] == pytest.approx(
        torch.load(tmp_path / "single.pt")["history"][-1]["train_loss"], rel=1e-4
    )
