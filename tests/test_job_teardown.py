"""A worker leaves its process group only when its body succeeded: a failing rank prints why before anything can
block on the group (destroy_process_group may wait on a failed collective), and exits promptly with it joined."""

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist

from parabench.engine import worker as worker_module
from parabench.engine.worker import job
from parabench.errors import RunStopped
from parabench.runtime.process import Process


def join_one_process_group(machine: object) -> Process:
    """start()'s stand-in: a real gloo group of this one process."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    return Process(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"))


@pytest.fixture
def plan(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """What job() reads of a plan; its process group is real and is left after the test whatever job() did."""
    monkeypatch.setattr(worker_module, "start", join_one_process_group)
    destroy = dist.destroy_process_group  # the real one: a test may count the calls job() makes
    yield SimpleNamespace(threads=torch.get_num_threads(), settings=SimpleNamespace(seed=0), machine=None)
    if dist.is_initialized():
        destroy()


def test_a_body_that_succeeds_leaves_the_process_group(plan: SimpleNamespace):
    with job(plan) as process:  # type: ignore[arg-type]
        assert dist.is_initialized() and process.world_size == 1
    assert not dist.is_initialized()


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"),
        RunStopped("rank 0 stopped at epoch 2 step 5 of 64: DistBackendError: NCCL communicator was aborted"),
        KeyboardInterrupt(),
    ],
)
def test_a_body_that_fails_keeps_the_group_and_its_error_propagates_unchanged(
    plan: SimpleNamespace, error: BaseException, monkeypatch: pytest.MonkeyPatch
):
    destroyed: list[tuple[object, ...]] = []
    monkeypatch.setattr(dist, "destroy_process_group", lambda *args: destroyed.append(args))
    with pytest.raises(type(error)) as raised, job(plan):  # type: ignore[arg-type]
        raise error
    assert raised.value is error
    assert destroyed == [] and dist.is_initialized()


def test_a_stage_that_fails_with_its_group_joined_prints_the_error_and_exits_at_once():
    stage = textwrap.dedent("""\
        import torch.distributed as dist
        from parabench.cli import stage_main
        from parabench.errors import RunStopped

        def main():
            dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            raise RunStopped("rank 0 stopped at epoch 1 step 3 of 8: RuntimeError: out of memory")

        stage_main(main)
    """)
    ended = subprocess.run([sys.executable, "-c", stage], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 2
    assert ended.stderr == "error: rank 0 stopped at epoch 1 step 3 of 8: RuntimeError: out of memory\n", (
        "nothing else: no warning about the group left joined"
    )
