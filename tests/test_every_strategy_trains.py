"""Every strategy trains through the one loop on CPU (2 gloo processes where it is multi-process) and learns."""

import dataclasses
from pathlib import Path

import pytest
import torch

from parabench.engine.distributed import Process
from parabench.engine.loop import fit
from parabench.engine.plan import RunPlan
from parabench.strategies import STRATEGIES
from parabench.workloads import WORKLOADS
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup
from tests.test_training_loop import separable_images

CASES = {
    "single": {},
    "ddp": {},
    "allreduce": {},
    "fsdp": {},
    "model_parallel": {"balance": "time"},
    "pipeline": {"engine": "inprocess", "split_size": 4},
    "pipeline-distributed-1f1b": {"engine": "distributed", "split_size": 4, "schedule": "1f1b"},
}


def plan_for(case: str) -> RunPlan:
    workload = WORKLOADS["fashion_mnist"]
    settings = workload.settings_model(
        epochs=2, batch_size=16, lr=0.05, momentum=0.9, weight_decay=0.0, scaling="strong", train_subset=None,
        eval_batch_size=32, warmup_steps=1, seed=0, width=4,
    )
    strategy = STRATEGIES[case.split("-")[0]]
    setup = dataclasses.replace(cpu_setup(devices=2, **CASES[case]), sample_shape=(16, 1, 28, 28))
    return RunPlan(role="train", workload=workload, strategy=strategy, setup=setup, settings=settings,
                   processes=strategy.processes(setup), replicas=strategy.data_replicas(setup), global_batch=16,
                   lr=0.05)


def train_and_save(rank: int, world_size: int, case: str, out: Path) -> None:
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu")) if world_size > 1 else CPU_PROCESS
    result = fit(plan_for(case), process, separable_images(128, 0), separable_images(64, 1), out / "ckpt.pt")
    if process.is_main:
        torch.save({"history": result.history, "keys": list(result.state_dict)}, out / "result.pt")


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_strategy_trains_through_the_loop(tmp_path, case):
    plan = plan_for(case)
    if plan.distributed:
        run_ranks(plan.processes, train_and_save, case, tmp_path)
    else:
        train_and_save(0, 1, case, tmp_path)
    result = torch.load(tmp_path / "result.pt")
    assert [row["epoch"] for row in result["history"]] == [1, 2]
    first, last = result["history"]
    assert last["train_loss"] < first["train_loss"]
    assert last["test_acc"] >= 0.8, "two classes: chance is 0.5"
    assert result["keys"] == list(WORKLOADS["fashion_mnist"].build_model(plan.settings).state_dict())
    assert (tmp_path / "ckpt.pt").exists()
