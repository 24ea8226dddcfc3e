"""Parallelized.named_parameters() gives the plain model's names under every wrapper, so parameter groups mean
the same under every strategy (2 gloo ranks for ddp, fsdp and the distributed pipeline)."""

from pathlib import Path

import pytest
import torch
from torch import nn

from parabench.models.d2l_resnet18 import d2l_resnet18
from parabench.runtime.process import Process
from parabench.strategies.registry import STRATEGIES
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup

ONE_PROCESS = {"single": {}, "model_parallel": {}, "pipeline": {"engine": "inprocess", "split_size": 4}}
TWO_PROCESSES = {
    "ddp": {},
    "allreduce": {},
    "fsdp": {},
    "zero": {},
    "pipeline": {"engine": "distributed", "split_size": 4},
}


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return d2l_resnet18(10, in_channels=1, width=4)


def plain_names() -> list[str]:
    return [name for name, _ in make_model().named_parameters()]


def names_under(strategy: str, options: dict, process: Process) -> list[str]:
    parallel = STRATEGIES[strategy].apply(make_model(), process, cpu_setup(devices=2, **options))
    return [name for name, _ in parallel.named_parameters()]


def rank_names(rank: int, world_size: int, out: Path) -> None:
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu"))
    torch.save(
        {strategy: names_under(strategy, options, process) for strategy, options in TWO_PROCESSES.items()},
        out / f"rank{rank}.pt",
    )


@pytest.mark.parametrize("strategy", list(ONE_PROCESS))
def test_one_process_strategies_keep_the_plain_names(strategy):
    assert names_under(strategy, ONE_PROCESS[strategy], CPU_PROCESS) == plain_names()


@pytest.mark.slow
def test_multi_process_strategies_keep_the_plain_names(tmp_path):
    run_ranks(2, rank_names, tmp_path)
    ranks = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)]
    for strategy in ("ddp", "allreduce", "fsdp"):
        assert ranks[0][strategy] == ranks[1][strategy] == plain_names(), strategy
    stages = [ranks[0]["pipeline"], ranks[1]["pipeline"]]
    assert stages[0] and stages[1], "each rank holds a stage"
    assert stages[0] + stages[1] == plain_names(), "the stages' names are the plain model's, in order"
