"""allreduce, fsdp, zero and dp against `single`: one SGD step through each strategy's own train_step.

allreduce, fsdp and zero run in 2 gloo ranks, each on its half of the global batch, exactly as the training loop
drives them (SGD over parallel.module.parameters() as the strategy makes the optimiser, zero_grad, train_step, step;
zero's ranks each step their half of the parameters and broadcast it, so every rank's equality proves the broadcast).
As in the DDP test, BatchNorm in training mode normalises per replica, so we prove: with BatchNorm frozen each equals
`single` on the whole batch; with BatchNorm training each equals `single` on ghost batches. Ranks other than 0 start
from different weights, so these equalities also prove the start-up broadcast from rank 0.

Tolerance: float32 parameters after one step (lr 0.1) agree within rtol 1e-4, atol 1e-6 on the CPU; only
the summation order of the gradient average differs (for fsdp: reduce-scatter instead of all-reduce).
dp (CUDA only) is held to atol 1e-5: GPU kernels also sum the forward and backward in another order.
All strategies run in the same two spawns (one per BatchNorm mode), shared by the tests of this module.
"""

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.errors import StrategyUnavailable
from parabench.runtime.process import Process
from parabench.strategies import allreduce, ddp, dp, fsdp, zero
from parabench.strategies.base import Strategy
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup
from tests.test_ddp_equivalence import (
    ATOL,
    GLOBAL_BATCH,
    LR,
    WORLD,
    assert_same,
    first_batch,
    make_data,
    make_model,
    max_difference,
    single_step,
)

DISTRIBUTED = {s.name: s for s in (allreduce.STRATEGY, ddp.STRATEGY, fsdp.STRATEGY, zero.STRATEGY)}
State = dict[str, torch.Tensor]
Runs = list[dict[str, State]]  # per rank, per strategy: the state after one step


def replica_model(rank: int) -> nn.Module:
    """The reference model on rank 0, shifted weights elsewhere: the strategy must start every rank from rank 0's."""
    model = make_model()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(rank)
    return model


def parameter_names() -> list[str]:
    return [name for name, _ in make_model().named_parameters()]


def loop_step(strategy: Strategy, rank: int, batchnorm_training: bool) -> State:
    """One step as the training loop takes it; returns what full_state_dict() gives this rank."""
    images, labels = make_data()
    process = Process(rank, rank, WORLD, torch.device("cpu"))
    parallel = strategy.apply(replica_model(rank), process, cpu_setup(devices=WORLD))
    parallel.module.train(batchnorm_training)
    optimizer = parallel.make_optimizer(
        lambda groups: torch.optim.SGD(groups, lr=LR), [{"params": list(parallel.module.parameters())}]
    )
    mine = first_batch(parallel.shard_index, parallel.shard_count)
    optimizer.zero_grad()
    parallel.train_step(Batch(images[mine], labels[mine]), F.cross_entropy)
    optimizer.step()
    return {name: tensor.detach().clone() for name, tensor in parallel.full_state_dict().items()}


def strategies_rank(rank: int, world_size: int, batchnorm_training: bool, out: Path) -> None:
    torch.set_num_threads(1)
    states = {name: loop_step(strategy, rank, batchnorm_training) for name, strategy in DISTRIBUTED.items()}
    torch.save(states, out / f"rank{rank}.pt")


def run_strategies(out: Path, batchnorm_training: bool) -> Runs:
    """Per rank, per strategy: the full state dict after one step (empty for fsdp off rank 0)."""
    run_ranks(WORLD, strategies_rank, batchnorm_training, out)
    return [torch.load(out / f"rank{rank}.pt") for rank in range(WORLD)]


def parameters(state: State) -> State:
    return {name: state[name] for name in parameter_names()}


def whole_models(runs: Runs, name: str) -> list[State]:
    """The parameters of every rank that holds the whole model (all ranks, or rank 0 only for fsdp)."""
    assert runs[0][name], f"{name}: rank 0 must hold the whole model"
    return [parameters(rank_states[name]) for rank_states in runs if rank_states[name]]


@pytest.fixture(scope="module")
def frozen(tmp_path_factory) -> Runs:
    return run_strategies(tmp_path_factory.mktemp("frozen"), batchnorm_training=False)


@pytest.fixture(scope="module")
def training(tmp_path_factory) -> Runs:
    return run_strategies(tmp_path_factory.mktemp("training"), batchnorm_training=True)


def test_replicas_start_apart():
    assert max_difference(parameters(replica_model(1).state_dict()), make_model().state_dict()) > 0.5


@pytest.mark.slow
@pytest.mark.parametrize("name", ["allreduce", "fsdp", "zero"])
def test_equals_single_with_frozen_batchnorm(frozen, name):
    reference = single_step(batchnorm_training=False, ghost_batches=1)
    for model in whole_models(frozen, name):
        assert max_difference(model, make_model().state_dict()) > 1e-3, "the step changed nothing"
        assert_same(model, reference)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["allreduce", "fsdp", "zero"])
def test_with_training_batchnorm_equals_ghost_batches(training, name):
    ghost, whole_batch = (single_step(batchnorm_training=True, ghost_batches=n) for n in (WORLD, 1))
    for model in whole_models(training, name):
        assert_same(model, ghost)
        assert max_difference(model, whole_batch) > 100 * ATOL, "per-replica BatchNorm should differ"


@pytest.mark.slow
def test_allreduce_reaches_the_parameters_of_ddp(frozen, training):
    for runs in (frozen, training):
        for by_hand, ddp_model in zip(whole_models(runs, "allreduce"), whole_models(runs, "ddp"), strict=True):
            assert max_difference(ddp_model, make_model().state_dict()) > 1e-3, "the step changed nothing"
            assert_same(by_hand, ddp_model)


@pytest.mark.slow
def test_fsdp_full_state_dict_is_the_plain_models_on_rank0(frozen):
    plain = make_model().state_dict()
    state = frozen[0]["fsdp"]
    assert list(state) == list(plain)
    assert {name: tensor.shape for name, tensor in state.items()} == {k: v.shape for k, v in plain.items()}
    assert all(type(tensor) is torch.Tensor and tensor.device.type == "cpu" for tensor in state.values())


def test_dp_refuses_a_machine_without_cuda():
    with pytest.raises(StrategyUnavailable) as refused:
        dp.STRATEGY.check(cpu_setup(devices=2), GLOBAL_BATCH)
    message = str(refused.value)
    assert "'dp'" in message and "CUDA" in message and "ddp" in message


def test_dp_is_one_process_over_all_devices():
    setup = cpu_setup(devices=2)
    assert (dp.STRATEGY.processes(setup), dp.STRATEGY.devices(setup), dp.STRATEGY.data_replicas(setup)) == (1, 2, 2)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="DataParallel needs 2 CUDA GPUs")
def test_dp_equals_single_with_frozen_batchnorm():
    base = cpu_setup(devices=2)
    cuda = base.machine.model_copy(update={"accelerator": "cuda", "backend": "nccl"})
    setup = base.model_copy(update={"machine": cuda})
    dp.STRATEGY.check(setup, GLOBAL_BATCH)
    images, labels = make_data()
    parallel = dp.STRATEGY.apply(make_model(), Process(0, 0, 1, torch.device("cuda", 0)), setup)
    parallel.module.eval()
    optimizer = parallel.make_optimizer(
        lambda groups: torch.optim.SGD(groups, lr=LR), [{"params": list(parallel.module.parameters())}]
    )
    whole = first_batch(parallel.shard_index, parallel.shard_count)
    optimizer.zero_grad()
    # cuDNN convolutions default to TF32, whose 10-bit mantissa would swamp the CPU reference's tolerance.
    with torch.backends.cudnn.flags(enabled=False):
        parallel.train_step(Batch(images[whole].to(parallel.input_device), labels[whole]), F.cross_entropy)
    optimizer.step()
    state = {name: tensor.cpu() for name, tensor in parallel.full_state_dict().items()}
    assert list(state) == list(make_model().state_dict())
    trained = parameters(state)
    assert max_difference(trained, make_model().state_dict()) > 1e-3, "the step changed nothing"
    reference = single_step(batchnorm_training=False, ghost_batches=1)
    for name in reference:
        torch.testing.assert_close(
            trained[name], reference[name], rtol=1e-4, atol=1e-5, msg=lambda m, name=name: f"{name}: {m}"
        )
