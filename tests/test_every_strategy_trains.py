"""Every strategy trains through the one loop on CPU (2 gloo processes where it is multi-process) and learns.

Why these assertions. The old version (2 epochs of 8 steps, lr 0.05, momentum 0.9, images labelled by their
brightness) failed on AVX2 machines for ddp, allreduce and fsdp at 0.46875 test accuracy: train accuracy was
1.0 while evaluation predicted one class. The cause was BatchNorm's running statistics (momentum 0.1): after
16 fast steps they still held a fifth of their initial values and lagged the weights, so evaluation, which
normalises with them, saw features unlike training's; recomputing them with the final weights gave 1.0 every
time, for every seed. It was not a strategy or rank bug (the three strategies compute the same per-replica
BatchNorm, hence the same number), and brightness labels made it worse (a batch's statistics carried its
labels). Now: images labelled by which half is bright (same mean brightness for both classes), lr 0.01 for
6 epochs of 8 steps, and the test asserts what is stable. Measured with tests/setups.py's data seeds and
settings.seed 0-9, 1 and 2 threads, on AVX-512 (and seeds 0-4 with AVX2 kernels, ATEN_CPU_CAPABILITY=avx2):
  - the last epoch's loss is at least 23 times below the first's for every strategy (asserted: 10 times);
  - last-epoch train accuracy >= 0.969 for every strategy (asserted: 0.9; chance is 0.5);
  - test accuracy is 1.0 for every seed except ddp/allreduce/fsdp at seed 2 with 1 thread on AVX-512 (0.625):
    replicas of 8 images give noisier running statistics, and one seed still lands on the knife-edge. So
    test accuracy is asserted only where it is stable: for `single` (tests/test_training_loop.py, 1.0 at
    every seed) and, here, through equality with `single` (tests/test_*equivalence.py).
"""

from pathlib import Path

import pytest
import torch

from parabench.engine.plan import RunPlan
from parabench.engine.training import fit
from parabench.runtime.process import Process
from parabench.workloads import WORKLOADS
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup, separable_data, tiny_plan

CASES = {
    "single": {},
    "ddp": {},
    "allreduce": {},
    "fsdp": {},
    "zero": {},
    "model_parallel": {"balance": "time"},
    "pipeline": {"engine": "inprocess", "split_size": 4},
    "pipeline-distributed-1f1b": {"engine": "distributed", "split_size": 4, "schedule": "1f1b"},
}
EPOCHS, LR = 6, 0.01


def plan_for(case: str, seed: int = 0, threads: int = 1) -> RunPlan:
    setup = cpu_setup(devices=2, batch_shape=(16, 1, 28, 28), threads=threads, **CASES[case])
    return tiny_plan(case.split("-")[0], setup=setup, epochs=EPOCHS, lr=LR, seed=seed)


def train_and_save(rank: int, world_size: int, case: str, out: Path, seed: int = 0, threads: int = 1) -> None:
    torch.set_num_threads(threads)
    process = Process(rank, rank, world_size, torch.device("cpu")) if world_size > 1 else CPU_PROCESS
    result = fit(plan_for(case, seed, threads), process, separable_data(seed=seed), out / "ckpt.pt", "test data")
    if process.is_main:
        torch.save({"history": result.history, "keys": list(result.state_dict)}, out / "result.pt")


def train(case: str, out: Path, seed: int = 0, threads: int = 1) -> dict:
    """Train the case in as many processes as it needs; rank 0's history and state keys."""
    plan = plan_for(case, seed, threads)
    if plan.distributed:
        run_ranks(plan.processes, train_and_save, case, out, seed, threads)
    else:
        train_and_save(0, 1, case, out, seed, threads)
    return torch.load(out / "result.pt")


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_strategy_trains_through_the_loop(tmp_path, case):
    result = train(case, tmp_path)
    history = result["history"]
    assert [row["epoch"] for row in history] == list(range(1, EPOCHS + 1))
    assert history[-1]["train_loss"] < history[0]["train_loss"] / 10, "the loss falls by a clear factor"
    assert history[-1]["train_acc"] >= 0.9, "two classes: chance is 0.5"
    assert result["keys"] == list(WORKLOADS["fashion_mnist"].build_model(plan_for(case).settings).state_dict())
    assert (tmp_path / "ckpt.pt").exists()
