"""Activation checkpointing (params.yaml `activation_checkpointing: blocks`): the same step as a plain model, weights,
gradients and BatchNorm statistics alike, with fewer bytes kept for backward; and under ddp on 2 gloo ranks.

Tolerance: on the CPU the recomputed forward runs the same kernels on the same inputs, so gradients agree to 1e-6.
"""

import copy
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.config import load_params
from parabench.engine.plan import make_plan
from parabench.models.checkpointing import checkpoint_blocks
from parabench.runtime.memory import SavedForBackward
from parabench.runtime.process import Process
from parabench.strategies import ddp
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup
from tests.test_ddp_equivalence import LR, WORLD, first_batch, make_data, make_model

State = dict[str, torch.Tensor]


def saved_bytes(model: nn.Module, images: torch.Tensor) -> int:
    """Bytes the forward keeps for backward, as a benchmark cell counts them (runtime.memory.SavedForBackward)."""
    with SavedForBackward() as saved:
        model(images).sum().backward()
    return saved.bytes


def one_step(model: nn.Module) -> tuple[State, State]:
    """One SGD step of the model on the first batch (BatchNorm training); its state and its gradients."""
    images, labels = make_data()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    mine = first_batch(0, 1)
    F.cross_entropy(model(images[mine]), labels[mine]).backward()
    gradients = {
        name: parameter.grad.clone() for name, parameter in model.named_parameters() if parameter.grad is not None
    }
    optimizer.step()
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}, gradients


def test_checkpointed_blocks_keep_fewer_bytes_for_backward():
    """d2l's ResNet-18 at width 4 on 8 images of 12x12: 706 KB kept plain, 59 KB checkpointed."""
    images = make_data()[0][:8]
    plain, checkpointed = make_model(), make_model()
    checkpoint_blocks(checkpointed)
    kept, kept_checkpointed = saved_bytes(plain, images), saved_bytes(checkpointed, images)
    assert kept_checkpointed < 0.6 * kept, f"{kept_checkpointed} bytes kept against {kept}"


def test_a_copy_of_a_checkpointed_block_runs_on_its_own_parameters_and_statistics():
    """The cut times a deep copy of each block (strategies/partition.py): that must leave the original's gradients
    and BatchNorm statistics as they were, checkpointed or not."""
    model = make_model()
    checkpoint_blocks(model)
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    sandbox = copy.deepcopy(model[0]).train()
    sandbox(make_data()[0][:8]).sum().backward()
    assert all(parameter.grad is None for parameter in model.parameters()), "the original got the copy's gradients"
    assert all(torch.equal(model.state_dict()[name], value) for name, value in before.items()), "statistics moved"
    assert all(parameter.grad is not None for parameter in sandbox.parameters())


def test_a_checkpointed_step_equals_the_plain_one_batchnorm_statistics_included():
    plain_state, plain_grads = one_step(make_model())
    model = make_model()
    checkpoint_blocks(model)
    state, grads = one_step(model)
    assert list(state) == list(plain_state), "parameter and buffer names unchanged"
    for name, value in plain_grads.items():
        torch.testing.assert_close(grads[name], value, rtol=1e-6, atol=1e-6, msg=name)
    for name, value in plain_state.items():
        torch.testing.assert_close(state[name], value, rtol=1e-6, atol=1e-6, msg=name)  # running_mean counted once


def ddp_rank(rank: int, world_size: int, out: Path) -> None:
    torch.set_num_threads(1)
    images, labels = make_data()
    process = Process(rank, rank, world_size, torch.device("cpu"))
    states = {}
    for checkpointed in (False, True):
        model = make_model()
        if checkpointed:
            checkpoint_blocks(model)
        parallel = ddp.STRATEGY.apply(model, process, cpu_setup(devices=world_size))
        optimizer = torch.optim.SGD(parallel.module.parameters(), lr=LR)
        mine = first_batch(parallel.shard_index, parallel.shard_count)
        parallel.train_step(Batch(images[mine], labels[mine]), F.cross_entropy)
        optimizer.step()
        states[checkpointed] = {name: tensor.detach().clone() for name, tensor in parallel.full_state_dict().items()}
    if rank == 0:
        torch.save(states, out / "states.pt")


@pytest.mark.slow
def test_ddp_with_checkpointed_blocks_steps_as_plain_ddp(tmp_path):
    run_ranks(WORLD, ddp_rank, tmp_path)
    states = torch.load(tmp_path / "states.pt")
    for name, value in states[False].items():
        torch.testing.assert_close(states[True][name], value, rtol=1e-6, atol=1e-6, msg=name)


def test_the_train_run_checkpoints_and_the_reference_stays_plain(base_params, write_params):
    base_params["activation_checkpointing"] = "blocks"
    params = load_params(write_params(base_params))
    assert make_plan(params, "fashion_mnist", "train").describe().activation_checkpointing == "blocks"
    assert make_plan(params, "fashion_mnist", "reference").describe().activation_checkpointing == "none"
    base_params["activation_checkpointing"] = "all"
    with pytest.raises(Exception, match=r"activation_checkpointing"):
        load_params(write_params(base_params))
