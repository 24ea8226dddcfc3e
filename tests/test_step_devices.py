"""What a step waits for and measures: every device its strategy computes on (clocks and peak memory), the peak of the
steps alone; and a pipeline stage that never reads the inputs does not transform them. CUDA is stood in for by
monkeypatched counters: these are the code paths a GPU run takes."""

from dataclasses import replace

import pytest
import torch

from parabench.batch import Batch
from parabench.engine import timing
from parabench.engine.timing import StepClock
from parabench.engine.training import build_trainer, optimizer_step
from parabench.runtime.memory import StepMemory, per_rank
from parabench.strategies.base import StepResult
from tests.setups import CPU_PROCESS, cpu_setup, separable_data, tiny_plan

GPUS = (torch.device("cuda", 0), torch.device("cuda", 1))


def test_the_step_clock_waits_for_every_device_before_each_read(monkeypatch):
    """dp, model_parallel and the in-process pipeline queue work on several GPUs: the clock drains all of them."""
    drained: list[torch.device] = []
    monkeypatch.setattr(timing, "synchronize", drained.append)
    clock = StepClock(GPUS, warmup_steps=0)
    with clock.step():
        assert drained == list(GPUS), "before the start"
    assert drained == [*GPUS, *GPUS] and len(clock.durations) == 1


def test_peak_memory_counts_the_steps_alone_on_each_device(monkeypatch):
    """The counters are reset before the steps (setup out) and read after them, per device; a pass's lower peak
    does not lower the one recorded."""
    allocated = {0: 900.0, 1: 50.0}  # MiB since the last reset; 900: the model's setup
    resets: list[int] = []

    def reset(device: torch.device) -> None:
        resets.append(device.index)
        allocated[device.index] = 0.0

    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", reset)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device: allocated[device.index] * 2**20)
    memory = StepMemory([*GPUS, GPUS[0]])
    memory.reset()
    assert resets == [0, 1], "each device once"
    allocated.update({0: 300.0, 1: 200.0})
    memory.read()
    memory.reset()
    allocated.update({0: 100.0, 1: 250.0})
    memory.read()
    assert memory.peaks_mb == {"cuda:0": 300.0, "cuda:1": 250.0}


def test_ranks_on_one_device_keep_their_plain_names_and_ranks_on_several_name_each():
    """`rank0` for ddp's ranks as before; `rank0 cuda:1` for a rank that drives several GPUs."""
    assert per_rank([{"cpu": 10.04}, {"cpu": 12.0}]) == {"rank0": 10.0, "rank1": 12.0}
    assert per_rank([{"cuda:0": 1.0, "cuda:1": 2.0}]) == {"rank0 cuda:0": 1.0, "rank0 cuda:1": 2.0}


@pytest.mark.parametrize("strategy", ["single", "model_parallel", "pipeline"])
def test_each_strategy_names_the_devices_it_computes_on(strategy):
    """On the CPU a cut model's stages share the one CPU: one device to wait for."""
    trainer = build_trainer(tiny_plan(strategy, setup=cpu_setup(devices=2)), CPU_PROCESS, steps_per_epoch=4)
    assert trainer.parallel.devices == (torch.device("cpu"),)


def test_a_process_that_reads_no_inputs_skips_the_transform():
    """A later pipeline stage gets the batch for its size and targets; decoding or augmenting it would waste the
    step's time (hotdog's crops on the CPU) on inputs it never reads."""
    data = separable_data()
    calls: list[int] = []

    class Counted(type(data)):  # type: ignore[misc]
        """The same data, counting the transform's calls."""

        def transform(self, batch: Batch) -> Batch:
            calls.append(len(batch))
            return super().transform(batch)

    data = Counted(**{name: getattr(data, name) for name in data.__dataclass_fields__})
    trainer = build_trainer(tiny_plan(), CPU_PROCESS, steps_per_epoch=4)
    batch = data.train_batch(0, torch.arange(16))
    optimizer_step(trainer, data, batch)
    assert calls == [16]
    later_stage = replace(trainer.parallel, reads_inputs=False, train_step=lambda batch, loss: StepResult(None, None))
    reader_free = replace(trainer, parallel=later_stage)
    _, fed = optimizer_step(reader_free, data, batch)
    assert calls == [16], "no transform where the inputs are not read"
    assert torch.equal(fed.targets, batch.targets)
