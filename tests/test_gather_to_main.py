"""Gathering every rank's optimiser state to rank 0 on the CPU (2 gloo ranks): the other ranks receive nothing, and
fsdp's DTensor shards stay DTensors, so that a checkpoint loads them back onto the same shards."""

from typing import Any

import pytest
import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard, distribute_tensor

from parabench.runtime.collectives import gather_to_main, on_cpu
from tests.multiprocess import run_ranks

WORLD = 2


def gather_rank(rank: int, world_size: int) -> None:
    """Gather an optimiser-like state (a DTensor shard, a plain tensor, numbers); check what each rank received."""
    mesh = init_device_mesh("cpu", (world_size,))
    state = {
        "state": {
            0: {"momentum_buffer": distribute_tensor(torch.arange(4.0), mesh, [Shard(0)]), "step": torch.tensor(rank)}
        },
        "param_groups": [{"lr": 0.1, "params": [0]}],
    }
    gathered: list[Any] | None = gather_to_main(on_cpu(state))
    if rank != 0:
        assert gathered is None, f"rank {rank} received {gathered}"
        return
    assert gathered is not None and len(gathered) == world_size
    for sender, received in enumerate(gathered):
        assert received["param_groups"] == [{"lr": 0.1, "params": [0]}]
        assert received["state"][0]["step"].item() == sender
        shard = received["state"][0]["momentum_buffer"]
        assert isinstance(shard, DTensor) and shard.placements == (Shard(0),), type(shard)
        torch.testing.assert_close(shard.to_local(), torch.arange(4.0)[2 * sender : 2 * sender + 2])


def test_rank_0_alone_receives_every_ranks_state_with_its_dtensor_shards():
    run_ranks(WORLD, gather_rank)


def test_a_process_alone_receives_its_own_value():
    value = {"lr": 0.1}
    assert gather_to_main(value) == [value]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_device_tensors_move_to_the_cpu_and_the_rest_stays():
    moved = on_cpu({"state": {0: {"buffer": torch.ones(2, device="cuda")}}, "groups": [(torch.zeros(1), 0.1, None)]})
    assert moved["state"][0]["buffer"].device.type == "cpu"
    assert moved["groups"][0][0].device.type == "cpu" and moved["groups"][0][1:] == (0.1, None)
