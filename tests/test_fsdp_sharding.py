"""fsdp.sharding on 2 gloo ranks: what each rank holds of the parameters after forward and after the step, and that
every mode steps as `single` does on the whole batch (BatchNorm frozen; float32 within rtol 1e-4, atol 1e-6, as
tests/test_data_parallel_equivalence.py holds full sharding).

full shards every parameter and reshards it after forward; grad_op keeps it gathered from forward to backward;
none keeps whole replicas; hybrid on one node shards within it, as full does.
"""

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.config import load_params
from parabench.engine.plan import make_plan
from parabench.runtime.process import Process
from parabench.strategies import fsdp
from parabench.strategies.options import FsdpOptions
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup
from tests.test_ddp_equivalence import ATOL, LR, RTOL, WORLD, first_batch, make_data, make_model

MODES = ("full", "grad_op", "none", "hybrid")


def local_elements(model: nn.Module) -> int:
    """How many parameter elements this rank holds: a DTensor's local shard, or the whole of a plain tensor."""
    return sum(
        (parameter.to_local() if hasattr(parameter, "to_local") else parameter).numel()
        for parameter in model.parameters()
    )


def sharded_rank(rank: int, world_size: int, out: Path) -> None:
    torch.set_num_threads(1)
    images, labels = make_data()
    held, states = {}, {}
    for mode in MODES:
        setup = cpu_setup(devices=world_size).model_copy(update={"fsdp": FsdpOptions(sharding=mode)})
        parallel = fsdp.STRATEGY.apply(make_model(), Process(rank, rank, world_size, torch.device("cpu")), setup)
        parallel.module.train(False)
        optimizer = torch.optim.SGD(parallel.module.parameters(), lr=LR)
        mine = first_batch(parallel.shard_index, parallel.shard_count)
        parallel.module(images[mine])  # a forward alone: what stays gathered until backward
        after_forward = local_elements(parallel.module)
        optimizer.zero_grad()
        parallel.train_step(Batch(images[mine], labels[mine]), F.cross_entropy)
        optimizer.step()
        held[mode] = {"after_forward": after_forward, "after_step": local_elements(parallel.module)}
        states[mode] = {name: tensor.detach().clone() for name, tensor in parallel.full_state_dict().items()}
    if rank == 0:
        torch.save({"held": held, "states": states}, out / "sharding.pt")


@pytest.fixture(scope="module")
def sharded(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("sharding")
    run_ranks(WORLD, sharded_rank, out)
    return torch.load(out / "sharding.pt")


@pytest.mark.slow
def test_each_mode_holds_its_share_of_the_parameters(sharded):
    whole = sum(parameter.numel() for parameter in make_model().parameters())
    held = sharded["held"]
    for mode in ("full", "hybrid"):
        assert held[mode]["after_step"] <= whole // WORLD + 64, f"{mode} shards every parameter"
        assert held[mode]["after_forward"] == held[mode]["after_step"], f"{mode} reshards after forward"
    assert held["grad_op"]["after_step"] <= whole // WORLD + 64
    assert held["grad_op"]["after_forward"] > whole // WORLD + 64, "grad_op keeps the weights gathered until backward"
    assert held["none"]["after_forward"] == held["none"]["after_step"] == whole, "none keeps whole replicas"


@pytest.mark.slow
def test_every_sharding_steps_as_single_does(sharded):
    images, labels = make_data()
    model = make_model().train(False)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    mine = first_batch(0, 1)
    F.cross_entropy(model(images[mine]), labels[mine]).backward()
    optimizer.step()
    expected = model.state_dict()
    for mode, state in sharded["states"].items():
        for name, value in expected.items():
            torch.testing.assert_close(state[name], value, rtol=RTOL, atol=ATOL, msg=f"{mode}: {name}")


def test_an_unknown_sharding_names_the_choices(base_params, write_params):
    base_params["fsdp"] = {"sharding": "zero3"}
    with pytest.raises(Exception, match=r"fsdp\.sharding"):
        load_params(write_params(base_params))
    base_params["fsdp"] = {"sharding": "grad_op"}
    base_params["strategy"] = "fsdp"
    base_params["hardware"]["devices"] = 2
    plan = make_plan(load_params(write_params(base_params)), "fashion_mnist", "train")
    assert plan.setup.fsdp.sharding == "grad_op"
