"""Gradient accumulation (`accumulate`): k micro-steps and one optimiser step equal one step on the k-times larger
batch, under single, ddp, allreduce and fsdp (2 gloo ranks); every backward but the last stays local; a value that
does not compose stops the plan, naming the key and the fix.

BatchNorm, as in the DDP test: in training mode each micro-batch is normalised with its own statistics, so the
equality is exact with BatchNorm frozen, and with BatchNorm training the steps equal `single` on ghost batches (the
micro-batches). Tolerance: float32 parameters after one SGD step (lr 0.1) within rtol 1e-4, atol 1e-6 (the sum of the
micro-steps' gradients runs in another order than the whole batch's).
"""

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.config import load_params
from parabench.engine.plan import make_plan
from parabench.engine.training import Trainer, optimizer_step
from parabench.errors import ConfigError
from parabench.runtime.process import Process
from parabench.strategies import allreduce
from parabench.strategies.base import Parallelized
from parabench.strategies.registry import STRATEGIES
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup
from tests.test_ddp_equivalence import LR, WORLD, assert_same, first_batch, make_data, make_model, max_difference

DATA = SimpleNamespace(loss=F.cross_entropy, transform=lambda batch: batch)


def step_with(
    strategy: str,
    process: Process,
    accumulate: int,
    batchnorm_training: bool,
    watch: Callable[[Parallelized], None] = lambda parallel: None,
) -> dict[str, torch.Tensor]:
    """One optimiser step of the loop (engine.training.optimizer_step) on this process's share of the first batch;
    `watch` sees the strategy's model before it."""
    images, labels = make_data()
    setup = cpu_setup(devices=process.world_size)
    parallel = STRATEGIES[strategy].apply(make_model(), process, setup)
    parallel.module.train(batchnorm_training)
    watch(parallel)
    mine = first_batch(parallel.shard_index, parallel.shard_count)
    optimizer = torch.optim.SGD(parallel.module.parameters(), lr=LR)
    optimizer_step(Trainer(parallel, optimizer, None, accumulate), DATA, Batch(images[mine], labels[mine]))
    state = parallel.full_state_dict()  # the whole model's on rank 0 (a collective)
    if not process.is_main:
        return {}
    return {name: state[name].clone() for name, _ in make_model().named_parameters()}


def ghost_reference(parts: int) -> dict[str, torch.Tensor]:
    """`single` on the whole first batch, BatchNorm training, each of `parts` consecutive micro-batches normalised
    on its own (the mean of their losses)."""
    images, labels = make_data()
    model = make_model().train()
    whole = first_batch(0, 1)
    losses = [F.cross_entropy(model(images[part]), labels[part]) for part in whole.chunk(parts)]
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    (sum(losses) / parts).backward()
    optimizer.step()
    return {name: value.detach() for name, value in model.named_parameters()}


def test_a_batch_splits_into_equal_consecutive_micro_batches():
    batch = Batch(torch.arange(8.0).view(8, 1), torch.arange(8), torch.arange(8) * 10)
    parts = batch.split(4)
    assert [part.targets.tolist() for part in parts] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert parts[3].unit_seeds is not None and parts[3].unit_seeds.tolist() == [60, 70]


def test_single_accumulating_equals_single_on_the_whole_batch():
    whole = step_with("single", CPU_PROCESS, 1, batchnorm_training=False)
    accumulated = step_with("single", CPU_PROCESS, 4, batchnorm_training=False)
    assert max_difference(whole, make_model().state_dict()) > 1e-3, "the step changed nothing"
    assert_same(accumulated, whole)
    assert_same(step_with("single", CPU_PROCESS, 2, batchnorm_training=True), ghost_reference(2))


def replica_steps(rank: int, world_size: int, out: Path) -> None:
    """Each distributed strategy with accumulate 2, BatchNorm frozen; and how many gradient exchanges each made."""
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu"))
    exchanges = {"allreduce": 0}
    averaging = allreduce.average_gradients

    def counted(*args: object) -> None:
        exchanges["allreduce"] += 1
        averaging(*args)  # type: ignore[arg-type]

    allreduce.average_gradients = counted  # type: ignore[assignment]

    def count_buckets(key: str) -> Callable[[Parallelized], None]:
        def register(parallel: Parallelized) -> None:
            def hook(state: object, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
                exchanges[key] += 1
                return allreduce_hook(None, bucket)  # type: ignore[arg-type]

            exchanges[key] = 0
            parallel.module.register_comm_hook(None, hook)  # type: ignore[operator]

        return register

    states = {name: step_with(name, process, 2, batchnorm_training=False) for name in ("allreduce", "fsdp")}
    states["ddp"] = step_with("ddp", process, 2, False, count_buckets("ddp accumulating"))
    step_with("ddp", process, 1, False, count_buckets("ddp"))
    torch.save({"states": states, "exchanges": exchanges}, out / f"rank{rank}.pt")


@pytest.mark.slow
def test_replicas_accumulating_equal_single_and_exchange_gradients_once_a_step(tmp_path):
    run_ranks(WORLD, replica_steps, tmp_path)
    reference = step_with("single", CPU_PROCESS, 1, batchnorm_training=False)
    for rank in range(WORLD):
        saved = torch.load(tmp_path / f"rank{rank}.pt")
        exchanges = saved["exchanges"]
        assert exchanges["allreduce"] == 1, "allreduce averaged after the last micro-step only"
        assert exchanges["ddp accumulating"] == exchanges["ddp"] >= 1, "ddp: no_sync on the first micro-step"
        if rank == 0:
            for state in saved["states"].values():
                assert_same(state, reference)


def test_accumulate_that_does_not_compose_stops_the_plan(base_params, write_params):
    base_params["accumulate"] = 3
    with pytest.raises(ConfigError, match=r"accumulate: 3 does not divide the 64 unit.*e\.g\. 2"):
        make_plan(load_params(write_params(base_params)), "fashion_mnist", "train", strategy_name="ddp")
    base_params["accumulate"] = 2
    params = load_params(write_params(base_params))
    assert make_plan(params, "fashion_mnist", "train", strategy_name="ddp").accumulate == 2
    assert make_plan(params, "fashion_mnist", "train", strategy_name="ddp").describe().accumulate == 2
    assert make_plan(params, "fashion_mnist", "reference").accumulate == 1, "the reference stays plain"
    with pytest.raises(ConfigError, match=r"accumulate: 2 does not compose with strategy pipeline.*accumulate: 1"):
        make_plan(params, "fashion_mnist", "train", strategy_name="pipeline")
