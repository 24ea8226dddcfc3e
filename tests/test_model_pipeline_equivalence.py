"""model_parallel and pipeline against `single`: the same model, seed and batch give the same numbers.

model_parallel computes exactly what `single` computes, BatchNorm included (whole batch at once).
pipeline, honestly: BatchNorm in training mode normalises each micro-batch with its own statistics, so
it is *not* `single` on the whole batch. We prove two exact statements instead of one vague one:
  1. with BatchNorm frozen (eval mode), pipeline equals `single` on the whole batch;
  2. with BatchNorm training, pipeline equals `single` run micro-batch by micro-batch ("ghost batches",
     outputs concatenated, one mean loss), and differs measurably from `single` on the whole batch.
Tolerances: outputs and gradients within rtol 1e-5, atol 1e-6 (the same float operations, regrouped);
parameters after one SGD step (lr 0.1) within rtol 1e-4, atol 1e-6, as in the DDP test. The distributed
engine runs in 2 real gloo processes; on the CPU its 2 devices are virtual. Under it the knobs compose: checkpointed
blocks step exactly as plain ones, compiled blocks as plain ones up to inductor's rounding, and a bf16 forward steps as
single's at bf16.
"""

from pathlib import Path

import pytest
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from parabench.batch import Batch
from parabench.errors import ConfigError
from parabench.models.checkpointing import checkpoint_blocks
from parabench.models.compiled import compile_blocks
from parabench.models.d2l_resnet18 import d2l_resnet18
from parabench.runtime.process import Process
from parabench.strategies import single
from parabench.strategies.base import Parallelized, Strategy, StrategySetup
from parabench.strategies.model_parallel import STRATEGY as MODEL_PARALLEL
from parabench.strategies.pipeline import STRATEGY as PIPELINE
from parabench.strategies.stage_devices import stage_devices
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup

BATCH, STAGES, LR = 8, 2, 0.1
RTOL, ATOL = 1e-5, 1e-6
STATE_RTOL, STATE_ATOL = 1e-4, 1e-6
# (schedule, split_size, BatchNorm training): 1F1B at its steady state, GPipe with the fewest micro-batches.
DISTRIBUTED_CASES = [("gpipe", 4, False), ("1f1b", 2, False), ("1f1b", 2, True)]
# The knobs under the distributed 1F1B schedule (BatchNorm frozen): each block checkpointed (the same numbers as
# without), each block compiled (its input gradient comes back channels-last: the stages must still exchange it), and
# the forward at bf16 (single's update at bf16 within 3% of its largest change, as tests/test_precision).
KNOB_CASES = ["blocks", "compile", "bf16-mixed"]
BF16_UPDATE_TOLERANCE = 0.03

Gradients = dict[str, Tensor]


def make_data() -> tuple[Tensor, Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.rand(BATCH, 1, 12, 12, generator=generator), torch.randint(0, 10, (BATCH,), generator=generator)


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return d2l_resnet18(10, in_channels=1, width=4)


def step_through(
    strategy: Strategy, setup: StrategySetup, batchnorm_training: bool
) -> tuple[Parallelized, Tensor, Tensor, Gradients]:
    """One forward and backward of the strategy on the batch: (parallel, loss, outputs, gradients by name)."""
    model = make_model()
    parallel = strategy.apply(model, CPU_PROCESS, setup)
    parallel.module.train(batchnorm_training)
    images, labels = make_data()
    loss, outputs = parallel.train_step(Batch(images, labels), F.cross_entropy)
    return parallel, loss, outputs, {name: p.grad for name, p in model.named_parameters()}


def ghost_batches(split_size: int, batchnorm_training: bool) -> tuple[Tensor, Gradients]:
    """`single` fed micro-batch by micro-batch: outputs concatenated, one mean loss over the batch."""
    model = make_model().train(batchnorm_training)
    images, labels = make_data()
    outputs = torch.cat([model(part) for part in images.split(split_size)])
    F.cross_entropy(outputs, labels).backward()
    return outputs.detach(), {name: p.grad for name, p in model.named_parameters()}


def assert_same(a: dict[str, Tensor], b: dict[str, Tensor], rtol: float = RTOL, atol: float = ATOL) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=rtol, atol=atol, msg=lambda m, name=name: f"{name}: {m}")


def max_difference(a: dict[str, Tensor], b: dict[str, Tensor]) -> float:
    return max((a[name].float() - b[name].float()).abs().max().item() for name in a)


@pytest.mark.parametrize("balance", ["parameters", "time"])
def test_model_parallel_equals_single(balance):
    parallel, loss, outputs, gradients = step_through(MODEL_PARALLEL, cpu_setup(STAGES, balance=balance), True)
    _, single_loss, single_outputs, single_gradients = step_through(single.STRATEGY, cpu_setup(), True)
    torch.testing.assert_close(outputs, single_outputs, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(loss, single_loss, rtol=RTOL, atol=ATOL)
    assert_same(gradients, single_gradients)
    recorded = parallel.details.recorded()
    shares, seconds = recorded.pop("stage_time_share"), recorded.pop("stage_seconds")
    assert len(shares) == STAGES and sum(shares) == pytest.approx(1, abs=1e-3) and min(shares) > 0
    assert len(seconds) == STAGES and min(seconds) > 0
    boundary, leaves = recorded.pop("boundary_bytes"), recorded.pop("block_output_bytes_per_unit")
    assert len(boundary) == STAGES - 1 and min(boundary) > 0 and len(leaves) == len(make_model()) - 1
    assert len(recorded.pop("block_seconds")) == len(make_model())
    assert recorded == {
        "stages": STAGES,
        "cut": parallel.module.sizes,
        "balance": balance,
        "devices_virtual": True,
    }
    assert parallel.full_state_dict().keys() == make_model().state_dict().keys()


@pytest.mark.parametrize(("split_size", "balance"), [(2, "parameters"), (3, "time")])
def test_pipeline_inprocess_equals_single_with_frozen_batchnorm(split_size, balance):
    setup = cpu_setup(STAGES, split_size=split_size, balance=balance)
    parallel, loss, outputs, gradients = step_through(PIPELINE, setup, batchnorm_training=False)
    _, single_loss, single_outputs, single_gradients = step_through(single.STRATEGY, cpu_setup(), False)
    torch.testing.assert_close(outputs, single_outputs, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(loss, single_loss, rtol=RTOL, atol=ATOL)
    assert_same(gradients, single_gradients)
    recorded = parallel.details.recorded()
    assert len(recorded.pop("stage_time_share")) == len(recorded.pop("stage_seconds")) == STAGES
    assert len(recorded.pop("boundary_bytes")) == STAGES - 1 and recorded.pop("block_seconds")
    assert recorded.pop("block_output_bytes_per_unit")
    assert recorded == {
        "engine": "inprocess",
        "split_size": split_size,
        "micro_batches": -(-BATCH // split_size),
        "stages": STAGES,
        "cut": parallel.module.sizes,
        "balance": balance,
        "devices_virtual": True,
        "batchnorm": "statistics per micro-batch",
    }


def test_pipeline_inprocess_with_training_batchnorm_is_ghost_batches():
    _, _, outputs, gradients = step_through(PIPELINE, cpu_setup(STAGES, split_size=2), batchnorm_training=True)
    ghost_outputs, ghost_gradients = ghost_batches(2, batchnorm_training=True)
    torch.testing.assert_close(outputs, ghost_outputs, rtol=RTOL, atol=ATOL)
    assert_same(gradients, ghost_gradients)
    _, _, _, whole_batch = step_through(single.STRATEGY, cpu_setup(), batchnorm_training=True)
    assert max_difference(gradients, whole_batch) > 100 * ATOL, "per-micro-batch BatchNorm should differ"


def test_cpu_stages_share_the_cpu():
    assert stage_devices(cpu_setup(3)) == [torch.device("cpu")] * 3


@pytest.mark.parametrize("strategy", [MODEL_PARALLEL, PIPELINE])
def test_fewer_than_two_devices_names_hardware_devices(strategy):
    with pytest.raises(ConfigError, match=r"needs at least 2 devices \(hardware.devices\)"):
        strategy.check(cpu_setup(1, split_size=2), BATCH)


def test_a_split_above_the_global_batch_is_refused_by_the_distributed_engine_s_own_rule():
    """A micro-batch above the batch is params.yaml's rule (config.Params; tests/test_config.py); the distributed
    schedules' need for equal micro-batches of the global batch refuses it here too."""
    with pytest.raises(ConfigError, match=r"pipeline\.split_size: 16 does not divide .*-S pipeline\.split_size=8"):
        PIPELINE.check(cpu_setup(STAGES, split_size=16, engine="distributed"), BATCH)


def test_distributed_needs_equal_micro_batches():
    PIPELINE.check(cpu_setup(STAGES, split_size=3, engine="inprocess"), BATCH)
    with pytest.raises(ConfigError, match=r"pipeline\.split_size: 3 does not divide .*-S pipeline\.split_size=2"):
        PIPELINE.check(cpu_setup(STAGES, split_size=3, engine="distributed"), BATCH)


def test_1f1b_needs_a_micro_batch_per_stage():
    PIPELINE.check(cpu_setup(STAGES, split_size=8, engine="distributed", schedule="gpipe"), BATCH)
    with pytest.raises(ConfigError, match=r"pipeline\.schedule: '1f1b' .*split_size to at most 4"):
        PIPELINE.check(cpu_setup(STAGES, split_size=8, engine="distributed", schedule="1f1b"), BATCH)


@pytest.mark.parametrize("strategy", [MODEL_PARALLEL, PIPELINE])
def test_more_devices_than_blocks_cut_one_stage_per_block(strategy):
    """partition.stages auto on 8 devices and a 6-block model: 6 stages, and the plan counts 6 devices."""
    parallel = strategy.apply(make_model(), CPU_PROCESS, cpu_setup(8, split_size=2))
    assert parallel.details.stages == 6 and parallel.module.sizes == [1] * 6
    assert strategy.devices(cpu_setup(8)) == 6


def test_processes_follow_the_engine():
    assert PIPELINE.processes(cpu_setup(STAGES, engine="distributed")) == STAGES
    assert PIPELINE.distributed(cpu_setup(STAGES, engine="distributed"))
    assert PIPELINE.processes(cpu_setup(STAGES, engine="inprocess")) == 1
    assert not PIPELINE.distributed(cpu_setup(STAGES, engine="inprocess"))
    assert PIPELINE.devices(cpu_setup(STAGES, engine="inprocess")) == MODEL_PARALLEL.devices(cpu_setup(STAGES)) == 2


def distributed_rank(rank: int, world_size: int, out: Path) -> None:
    """Each case: this rank's stage, one SGD step through the schedule, the gathered state and the outputs."""
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu"))
    for schedule, split_size, batchnorm_training in DISTRIBUTED_CASES:
        setup = cpu_setup(world_size, split_size=split_size, engine="distributed", schedule=schedule)
        parallel = PIPELINE.apply(make_model(), process, setup)
        parallel.module.train(batchnorm_training)
        optimizer = torch.optim.SGD(parallel.module.parameters(), lr=LR)
        optimizer.zero_grad()
        images, labels = make_data()
        loss, outputs = parallel.train_step(Batch(images, labels), F.cross_entropy)
        optimizer.step()
        result = {
            "state": parallel.full_state_dict(),
            "loss": loss,
            "outputs": outputs,
            "details": parallel.details.recorded(),
            "reads_inputs": parallel.reads_inputs,
        }
        torch.save(result, out / f"{schedule}-{split_size}-{batchnorm_training}-rank{rank}.pt")
    for knob in KNOB_CASES:
        model = make_model()
        setup = cpu_setup(world_size, split_size=2, engine="distributed", schedule="1f1b")
        if knob == "blocks":
            checkpoint_blocks(model)
        elif knob == "compile":
            compile_blocks(model)
        else:
            setup = setup.model_copy(update={"precision": knob})
        parallel = PIPELINE.apply(model, process, setup)
        parallel.module.eval()
        optimizer = torch.optim.SGD(parallel.module.parameters(), lr=LR)
        optimizer.zero_grad()
        parallel.train_step(Batch(*make_data()), F.cross_entropy)
        optimizer.step()
        torch.save(parallel.full_state_dict(), out / f"{knob}-rank{rank}.pt")


def single_after_step(split_size: int, batchnorm_training: bool) -> tuple[dict[str, Tensor], Tensor]:
    """`single`'s state after one SGD step (ghost batches of split_size when BatchNorm trains), and its outputs."""
    model = make_model().train(batchnorm_training)
    images, labels = make_data()
    parts = images.split(split_size) if batchnorm_training else [images]
    outputs = torch.cat([model(part) for part in parts])
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    optimizer.zero_grad()
    F.cross_entropy(outputs, labels).backward()
    optimizer.step()
    return {name: value.detach() for name, value in model.state_dict().items()}, outputs.detach()


def single_at_bf16() -> dict[str, Tensor]:
    """`single`'s state after one SGD step of the whole batch with its forward at bf16 (BatchNorm frozen)."""
    setup = cpu_setup().model_copy(update={"precision": "bf16-mixed"})
    parallel = single.STRATEGY.apply(make_model(), CPU_PROCESS, setup)
    parallel.module.eval()
    optimizer = torch.optim.SGD(parallel.module.parameters(), lr=LR)
    optimizer.zero_grad()
    parallel.train_step(Batch(*make_data()), F.cross_entropy)
    optimizer.step()
    return {name: value.detach() for name, value in parallel.full_state_dict().items()}


@pytest.mark.slow
def test_pipeline_distributed_equals_single(tmp_path):
    run_ranks(STAGES, distributed_rank, tmp_path)
    for schedule, split_size, batchnorm_training in DISTRIBUTED_CASES:
        case = f"{schedule}-{split_size}-{batchnorm_training}"
        first, last = (torch.load(tmp_path / f"{case}-rank{rank}.pt") for rank in range(STAGES))
        reference, reference_outputs = single_after_step(split_size, batchnorm_training)
        assert max_difference(first["state"], make_model().state_dict()) > 1e-3, f"{case}: the step changed nothing"
        assert_same(first["state"], reference, rtol=STATE_RTOL, atol=STATE_ATOL)
        assert first["loss"] is None and first["outputs"] is None
        assert first["reads_inputs"] and not last["reads_inputs"], "only the first stage transforms the inputs"
        torch.testing.assert_close(last["outputs"], reference_outputs, rtol=RTOL, atol=ATOL)
        torch.testing.assert_close(
            last["loss"], F.cross_entropy(reference_outputs, make_data()[1]), rtol=RTOL, atol=ATOL
        )
        assert last["details"]["micro_batches"] == BATCH // split_size
        assert last["details"]["schedule"] == schedule and last["details"]["cut"] == [4, 2]
    plain, _ = single_after_step(BATCH, batchnorm_training=False)
    for knob in ("blocks", "compile"):
        assert_same(torch.load(tmp_path / f"{knob}-rank0.pt"), plain, rtol=STATE_RTOL, atol=STATE_ATOL)
    before, at_bf16 = make_model().state_dict(), single_at_bf16()
    update = {name: at_bf16[name] - before[name] for name, _ in make_model().named_parameters()}
    largest = max(float(change.abs().max()) for change in update.values())
    off = max_difference(
        {name: torch.load(tmp_path / "bf16-mixed-rank0.pt")[name] - before[name] for name in update}, update
    )
    assert largest > 1e-3 and off <= BF16_UPDATE_TOLERANCE * largest, f"bf16 pipeline off by {off:.3g} of {largest:.3g}"
    assert max_difference(at_bf16, plain) > off, "bf16 changes the step more than the pipeline does at bf16"
    trained_batchnorm = torch.load(tmp_path / "1f1b-2-True-rank0.pt")["state"]
    whole_batch, _ = single_after_step(BATCH, batchnorm_training=True)
    assert max_difference(trained_batchnorm, whole_batch) > 100 * STATE_ATOL, "per-micro-batch BatchNorm should differ"
