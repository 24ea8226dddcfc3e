"""Run a function in N real processes joined by a gloo process group on 127.0.0.1.

The processes come from a fork server that imported torch and the project once (multiprocessing's "forkserver" with
a preload): each rank starts in a fraction of a second instead of importing torch again, as a spawned one would. The
server never runs a kernel, so forking it is safe; ranks still share nothing with the test's own process.
"""

import os
import socket
from collections.abc import Callable
from typing import Any

import torch.distributed as dist
import torch.multiprocessing as mp

PRELOADED = [
    "torch",
    "torch.distributed",
    "torchvision",
    "parabench.strategies",
    "parabench.workloads",
    "parabench.engine.training",
    "tests.multiprocess",
]
mp.set_forkserver_preload(PRELOADED)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _entry(rank: int, world_size: int, port: int, target: Callable[..., None], args: tuple[Any, ...]) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    try:
        target(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def run_ranks(world_size: int, target: Callable[..., None], *args: Any) -> None:
    """Call target(rank, world_size, *args) in `world_size` spawned processes; raise if any fails."""
    mp.start_processes(
        _entry, args=(world_size, free_port(), target, args), nprocs=world_size, join=True, start_method="forkserver"
    )
