"""A benchmark or sweep cell alive in its job's workers: set up once (the model, optimiser and strategy, a pool of
batches, the warm-up, what is counted off the clock), then timed a turn of a step or a few at a time while the other
cells wait, through the one training loop's pass (engine/training.py).

Its model and optimiser live from its first turn to its last, so a turn needs no warm-up of its own, and turn t of
every cell runs within seconds of the others': the machine's drift between turns hits every cell alike, and a ratio
of two cells is taken turn by turn (stats.ratio_interval).
"""

import gc
import itertools
import statistics
import time
from collections.abc import Iterator

import torch
import torch.distributed as dist
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.engine.plan import RunPlan
from parabench.engine.timing import StepClock
from parabench.engine.training import (
    build_trainer,
    epoch_batches,
    optimizer_step,
    shard_of,
    steps_per_epoch,
    train_pass,
)
from parabench.records import CellSetup, CellTurn
from parabench.runtime.collectives import gather_objects, slowest_per_step
from parabench.runtime.memory import (
    SavedForBackward,
    StepMemory,
    devices_of,
    memory_kind,
    memory_now_mb,
    per_rank,
    release_free_heap,
)
from parabench.runtime.process import Process
from parabench.strategies.base import StepResult
from parabench.workloads import WorkloadData

BATCH_POOL = 8  # distinct batches a cell cycles through: more than a turn takes, few enough to hold in memory


def endless_batches(data: WorkloadData, plan: RunPlan, shard_index: int, shard_count: int) -> Iterator[Batch]:
    """This process's share of each global batch, epoch after epoch, as training would draw them."""
    for epoch in itertools.count():
        yield from epoch_batches(data, plan.global_batch, shard_index, shard_count, plan.settings.seed, epoch)


def transform_rate(data: WorkloadData, batches: list[Batch], device: torch.device, warmup: int) -> float:
    """Units per second of the workload's transform alone (decode, normalise, augment) on this process's device."""
    clock = StepClock([device], warmup)
    for batch in batches:
        with clock.step():
            data.transform(batch.to(device))
    return len(batches[-1]) / statistics.median(clock.durations)


def bytes_per_unit(fed: Batch, result: StepResult, reads_inputs: bool) -> tuple[float | None, float | None]:
    """A unit's bytes into the model (the batch it took, `fed`, transformed where this process `reads_inputs`) and out
    of it (the outputs the loss read in `result`): what a strategy splitting each batch over devices moves per unit (dp
    scatters the inputs, gathers the outputs and scatters their gradients). None where this process has no outputs or
    reads no inputs (a pipeline's stages: none is the whole model)."""
    if result.outputs is None or not reads_inputs:
        return None, None
    return fed.inputs.nbytes / len(fed), result.outputs.nbytes / len(fed)


def gradient_and_buffer_bytes(model: nn.Module) -> tuple[list[int], int]:
    """Each trained parameter's gradient bytes, in the order the model registers them, and its buffers' bytes."""
    gradients = [param.numel() * param.element_size() for param in model.parameters() if param.requires_grad]
    return gradients, sum(buffer.numel() * buffer.element_size() for buffer in model.buffers())


def allreduce_seconds(numel: int, device: torch.device, repeats: int = 3) -> float:
    """The median time of one all-reduce of `numel` float32 values over every process, timed by a StepClock after one
    warm-up call: the full cost of averaging a model's gradients at once, unhidden."""
    flat = torch.zeros(numel, dtype=torch.float32, device=device)
    clock = StepClock([device], warmup_steps=1)
    for _ in range(repeats + 1):
        with clock.step():
            dist.all_reduce(flat)
    return statistics.median(clock.durations)


def memory_from_now(device: torch.device) -> tuple[StepMemory, dict[str, float]]:
    """Peak memory counted from now on the process's devices, and what they hold now (the earlier cells' memory
    alone, once collected and the free heap given back)."""
    gc.collect()
    release_free_heap()
    memory = StepMemory(devices_of(device))
    held_mb = memory_now_mb(memory.devices)
    memory.reset()
    return memory, held_mb


class TimedCell:
    """A cell's trainer and batches, kept between turns. `setup` is rank 0's CellSetup (None on the other ranks).

    Cells of one process layout share their job's processes: the cell's peak memory is measured while it is set up,
    alone, as what it adds to the memory held before it (the earlier cells') at its peak, on top of `base_mb`, what the
    process held before any cell (torch, the process group, the data): what it would need on its own."""

    def __init__(
        self,
        plan: RunPlan,
        process: Process,
        data: WorkloadData,
        model_state: dict[str, Tensor],
        warmup: int,
        base_mb: dict[str, float],
    ):
        started = time.perf_counter()
        self.plan, self.process, self.data = plan, process, data
        memory, held_mb = memory_from_now(process.device)
        self.trainer = build_trainer(plan, process, steps_per_epoch(data.train_units, plan.global_batch), model_state)
        parallel = self.trainer.parallel
        parallel.module.train()
        shard_index, shard_count = shard_of(plan, parallel, process)
        pool = list(itertools.islice(endless_batches(data, plan, shard_index, shard_count), max(BATCH_POOL, warmup)))
        self._batches: Iterator[Batch] = itertools.cycle(pool)
        input_rate = transform_rate(data, pool, parallel.input_device, 1) if parallel.reads_inputs else None
        warming = StepClock(parallel.devices, warmup)
        train_pass(self.trainer, data, self._take(warmup), warmup, warming)
        peaks, kept, unit_bytes = self._measured_step(memory, held_mb, base_mb)
        parameters = plan.workload.parameter_count(plan.settings)
        communicates = plan.strategy.data_parallel and plan.copies == 1 and process.world_size > 1
        full_allreduce = allreduce_seconds(parameters, process.device) if communicates else None
        gradient_bytes, buffer_bytes = gradient_and_buffer_bytes(parallel.model)
        gc.collect()
        gc.freeze()  # the model, optimiser and batches live to the last turn: no collection during a step scans them
        self.setup = (
            CellSetup(
                unit=data.unit,
                setup_s=time.perf_counter() - started,
                warmup_step_durations=warming.warmup_durations,
                peak_memory_mb=peaks,
                memory_kind=memory_kind(process.device),
                saved_for_backward_mb=kept,
                input_bytes_per_unit=unit_bytes[0],
                output_bytes_per_unit=unit_bytes[1],
                gradient_allreduce_s=full_allreduce,
                parameters=parameters,
                gradient_bytes=gradient_bytes,
                buffer_bytes=buffer_bytes,
                transform_units_per_s=input_rate,
                strategy_details=parallel.details.recorded(),
            )
            if process.is_main
            else None
        )

    def _measured_step(
        self, memory: StepMemory, held_mb: dict[str, float], base_mb: dict[str, float]
    ) -> tuple[dict[str, float], dict[str, float], tuple[float | None, float | None]]:
        """One more step, off the clock: every rank's peak memory on its devices as if the cell ran alone (the memory
        `held_mb` before it was built, taken out, and the process's `base_mb` put back), what each rank's forward kept
        for backward, and the bytes a unit of its inputs and outputs takes."""
        parallel = self.trainer.parallel
        with SavedForBackward() as saved:
            result, fed = optimizer_step(self.trainer, self.data, next(self._batches))
        memory.read()
        alone = {device: base_mb[device] + peak - held_mb[device] for device, peak in memory.peaks_mb.items()}
        used = {device: mb for device, mb in alone.items() if device in {str(each) for each in parallel.devices}}
        peaks = per_rank(gather_objects(used))
        kept = per_rank(gather_objects({str(self.process.device): saved.mb}))
        return peaks, kept, bytes_per_unit(fed, result, parallel.reads_inputs)

    def _take(self, steps: int) -> Iterator[Batch]:
        return itertools.islice(self._batches, steps)

    def turn(self, steps: int) -> CellTurn | None:
        """Time `steps` more steps; rank 0 gets every rank's steps, phases and signs (None on the others). The garbage
        collector waits for the turn's end: what it would find is the turn's own garbage, collected off the clock."""
        torch.set_num_threads(self.plan.threads)
        clock = StepClock(self.trainer.parallel.devices, 0, phases=True, signs=True)
        gc.disable()
        try:
            train_pass(self.trainer, self.data, self._take(steps), steps, clock)
        finally:
            gc.enable()
        durations = slowest_per_step(clock.durations)
        phases, signs = gather_objects(clock.phases), gather_objects(clock.signs)
        if not self.process.is_main:
            return None
        return CellTurn(step_durations=durations, phase_durations=phases, signs=signs)
