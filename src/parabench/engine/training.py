"""The one training loop, read top to bottom: batches dealt -> optimizer_step -> a pass -> fit (engine/timed_cell.py
times the same pass, a turn at a time).

Every strategy and workload runs through it with the same data, timing and checkpoints; the strategy's own part of
a step is its `train_step` (strategies/base.py and the strategy's module).
"""

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor
from torch.utils.data import Dataset, DistributedSampler
from tqdm import tqdm

from parabench.batch import Batch
from parabench.engine import checkpoint
from parabench.engine.plan import RunPlan
from parabench.engine.timing import StepClock
from parabench.errors import ConfigError, Interrupted, RunStopped
from parabench.models.checkpointing import checkpoint_blocks
from parabench.models.compiled import compile_blocks
from parabench.runtime import load
from parabench.runtime.collectives import broadcast_object, gather_objects, gather_to_main, on_cpu
from parabench.runtime.memory import StepMemory
from parabench.runtime.process import Process
from parabench.runtime.torchrun import PROGRESS_ENV
from parabench.strategies.base import LossFn, Parallelized, StepResult
from parabench.workloads import WorkloadData

# ---- batches dealt: the same global batches for every strategy, dealt out to replicas ----


def shard_batches(
    num_units: int, batch_per_replica: int, shard_index: int, shard_count: int, seed: int, epoch: int
) -> Iterator[torch.Tensor]:
    """Unit indices of this replica's part of each global batch in one epoch.

    DistributedSampler shuffles with the same seeded permutation on every process and deals it out
    round-robin, so the k-th batches of all replicas together are exactly the k-th global batch of a
    single process that uses batch_per_replica * shard_count: every strategy sees the same data, whether
    a unit is a sample or a whole episode.
    """
    sampler: DistributedSampler[int] = DistributedSampler(
        cast("Dataset[int]", range(num_units)),  # a sized range of unit indices is all the sampler reads
        num_replicas=shard_count,
        rank=shard_index,
        shuffle=True,
        seed=seed,
        drop_last=True,
    )
    sampler.set_epoch(epoch)
    indices = torch.tensor(list(sampler))
    full_batches = len(indices) // batch_per_replica
    yield from indices[: full_batches * batch_per_replica].split(batch_per_replica)


def steps_per_epoch(num_units: int, global_batch: int) -> int:
    """Optimizer steps in one epoch (incomplete last batches are dropped)."""
    return num_units // global_batch


def epoch_batches(
    data: WorkloadData, global_batch: int, shard_index: int, shard_count: int, seed: int, epoch: int
) -> Iterator[Batch]:
    """This replica's batches of one epoch, assembled on the CPU one at a time as they are asked for, each unit
    with its own augmentation seed where the workload augments."""
    for indices in shard_batches(data.train_units, global_batch // shard_count, shard_index, shard_count, seed, epoch):
        batch = data.train_batch(epoch, indices)
        yield replace(batch, unit_seeds=unit_seeds(seed, epoch, indices)) if data.augments else batch


def unit_seeds(seed: int, epoch: int, indices: torch.Tensor) -> torch.Tensor:
    """One seed per unit, a pure function of (run seed, epoch, unit index): a run repeats exactly, and a unit's
    augmentation does not depend on the replica, micro-batch or process count that trains it."""
    states = np.fromiter(
        (np.random.SeedSequence([seed, epoch, index]).generate_state(1, np.uint64)[0] for index in indices.tolist()),
        dtype=np.uint64,
        count=len(indices),
    )
    return torch.from_numpy((states >> np.uint64(1)).astype(np.int64))


def shard_of(plan: RunPlan, parallel: Parallelized, process: Process) -> tuple[int, int]:
    """Which share of every global batch this process trains on, and among how many shares.

    Independent side-by-side copies (plan.copies > 1) each take their rank's share, as replicas would.
    """
    if plan.copies > 1:
        return process.rank, plan.copies
    return parallel.shard_index, parallel.shard_count


# ---- one optimiser step ----


@dataclass(frozen=True)
class Trainer:
    """What one training step needs: the parallelised model, its optimiser, its learning-rate schedule, how many
    micro-steps make an optimiser step (gradient accumulation), and fp16's loss scaler (precision 16-mixed)."""

    parallel: Parallelized
    optimizer: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LRScheduler | None
    accumulate: int = 1
    scaler: torch.amp.GradScaler | None = None


def build_trainer(
    plan: RunPlan, process: Process, steps_per_epoch: int, model_state: dict[str, Tensor] | None = None
) -> Trainer:
    """Seed, build the plain model (from `model_state`, or initialised by the workload), apply the strategy,
    then the workload's optimiser over its parameter groups, named as in the plain model (as the strategy makes it:
    Parallelized.make_optimizer), and its schedule over the run's epochs of `steps_per_epoch` steps."""
    workload, settings = plan.workload, plan.settings
    torch.manual_seed(settings.seed)
    if model_state is None:
        model = workload.build_model(settings)
        workload.initialize(model, settings)
    else:
        model = workload.model_holding(settings, model_state)
    if plan.compile:
        compile_blocks(model)
    if plan.activation_checkpointing == "blocks":  # around the compiled forward: dynamo cannot trace its context
        checkpoint_blocks(model)
    parallel = plan.strategy.apply(model, process, plan.setup)
    groups = workload.param_groups(parallel.named_parameters(), settings)
    optimizer = parallel.make_optimizer(
        lambda chosen: workload.optimizer(chosen, settings),
        [{"params": group.params, "lr": plan.lr * group.lr_scale} for group in groups],
    )
    schedule = workload.lr_schedule(optimizer, settings, steps_per_epoch)
    scaler = None
    if plan.setup.precision == "16-mixed":
        scaler = loss_scaler(parallel.devices[0], plan.strategy.overflow_seen_by_all(plan.setup))
    return Trainer(parallel, optimizer, schedule, plan.accumulate, scaler)


def loss_scaler(device: torch.device, overflow_seen_by_all: bool) -> torch.amp.GradScaler:
    """fp16's loss scaler on the process's device: torch's where every process sees an overflow on any
    (`Strategy.overflow_seen_by_all`), else FSDP's ShardedGradScaler, which all-reduces the overflow check over the
    processes so that all skip that step alike (the distributed pipeline: one stage's gradients each). Its scale is
    set up on every process at once (`scale()` of a zero sets it up), since only the last stage scales a loss."""
    if overflow_seen_by_all:
        return torch.amp.GradScaler(device.type)
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler  # the FSDP package: only where needed

    scaler = ShardedGradScaler(device.type, process_group=dist.group.WORLD)
    scaler.scale(torch.zeros((), device=device))
    return scaler


def optimizer_step(
    trainer: Trainer, data: WorkloadData, batch: Batch, mark: Callable[[str], None] = lambda phase: None
) -> tuple[StepResult, Batch]:
    """Batch to the strategy's device and through the workload's transform (where this process reads the inputs),
    forward and backward through the strategy, the update and the schedule; returns the step's result and the batch as
    the model took it, whose targets the step was scored against (a transform never changes them). `mark(phase)` is
    called as each of timing.PHASES ends."""
    trainer.optimizer.zero_grad(set_to_none=True)
    batch = batch.to(trainer.parallel.input_device)
    if trainer.parallel.reads_inputs:
        batch = data.transform(batch)
    mark("input")
    result = accumulated_step(trainer, batch, data.loss)
    mark("forward_backward")
    if trainer.scaler is None:
        trainer.optimizer.step()
    else:  # unscale, and skip the update if a gradient overflowed; then adjust the scale
        trainer.scaler.step(trainer.optimizer)
        trainer.scaler.update()
    if trainer.schedule is not None:
        trainer.schedule.step()
    mark("optimizer")
    return result, batch


def accumulated_step(trainer: Trainer, batch: Batch, loss: LossFn) -> StepResult:
    """Forward and backward through the strategy: on the whole batch, or (gradient accumulation) on each of
    trainer.accumulate equal micro-batches in turn, each loss divided by their number so that the gradients sum to
    the whole batch's mean, and every backward but the last kept local (the strategy's no_sync); under fp16 each
    loss scaled before its backward. Returns the mean loss (unscaled) and all the outputs, as one step on the whole
    batch would."""
    scaler = trainer.scaler
    if scaler is None:
        return micro_steps(trainer, batch, loss)

    def scaled(outputs: Tensor, targets: Tensor) -> Tensor:
        return scaler.scale(loss(outputs, targets))

    result = micro_steps(trainer, batch, scaled)
    return result._replace(loss=None if result.loss is None else result.loss / scaler.get_scale())


def micro_steps(trainer: Trainer, batch: Batch, loss: LossFn) -> StepResult:
    """Forward and backward on the whole batch, or on trainer.accumulate micro-batches (accumulated_step)."""
    if trainer.accumulate == 1:
        return trainer.parallel.train_step(batch, loss)
    parts = trainer.accumulate

    def share(outputs: Tensor, targets: Tensor) -> Tensor:
        return loss(outputs, targets) / parts

    results = []
    for index, micro in enumerate(batch.split(parts)):
        with trainer.parallel.no_sync() if index < parts - 1 else contextlib.nullcontext():
            results.append(trainer.parallel.train_step(micro, share))
    losses = [result.loss for result in results if result.loss is not None]
    outputs = [result.outputs for result in results if result.outputs is not None]
    return StepResult(
        torch.stack(losses).sum() if losses else None,  # the micro-losses, each a share: the whole batch's mean
        torch.cat(outputs) if outputs else None,
    )


# ---- a pass: one timed step per batch ----


# How a collective fails on a rank whose peer has gone: gloo's "Connection closed by peer [127.0.0.1]:34227" (or
# "reset"), NCCL's "remote process exited or there was a network error" and its aborted communicator.
LOST_PEER = re.compile(
    r"Connection (?:closed|reset) by peer(?: \[[^\]]*\]:\d+)?|remote process exited[^.]*|communicator was aborted"
)


class StepFailed(Exception):
    """A training step raised: which step of how many, and the error."""

    def __init__(self, step: int, steps: int, error: Exception):
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        lost = LOST_PEER.search(first_line)
        what = (
            f"it lost the connection to another rank, which ended first ({lost[0]}): that rank's error is the cause"
            if lost
            else f"{type(error).__name__}: {first_line}"
        )
        super().__init__(f"step {step} of {steps}: {what}")
        self.step, self.steps, self.error = step, steps, error


@dataclass(frozen=True)
class PassTotals:
    """Sums over the units a process saw outputs for: the loss (times units), each tally, and the units."""

    loss: float
    tallies: dict[str, float]
    units: float

    @classmethod
    def combine(cls, parts: list["PassTotals"]) -> "PassTotals":
        """The totals of several processes together (a pipeline's early stages contribute none)."""
        tallies: dict[str, float] = {}
        for part in parts:
            for key, value in part.tallies.items():
                tallies[key] = tallies.get(key, 0.0) + value
        return cls(loss=sum(part.loss for part in parts), tallies=tallies, units=sum(part.units for part in parts))

    def means(self) -> dict[str, float]:
        """The mean loss and the mean of every tally per unit, named train_loss, train_<tally>."""
        return {
            "train_loss": self.loss / self.units,
            **{f"train_{key}": value / self.units for key, value in self.tallies.items()},
        }


def train_pass(
    trainer: Trainer,
    data: WorkloadData,
    batches: Iterable[Batch],
    steps: int,
    clock: StepClock,
    progress: str | None = None,
    after_step: Callable[[int], None] | None = None,
) -> PassTotals:
    """Step once per batch; sum the loss and the workload's tallies wherever this process has outputs.

    Each batch is assembled on the CPU before the clock starts (as a data loader would, ahead of time); the
    clock times moving it to the device, the transform, forward, backward and the update. The totals stay
    on the device until the pass ends, so no step waits for a copy to the host. `progress` labels the tqdm
    bar (None: no bar, as on ranks other than 0); `after_step(step)` runs after each step, off the clock.
    """
    losses: list[Tensor] = []
    tallies: dict[str, list[Tensor]] = {}
    units = 0
    bar = tqdm(batches, total=steps, desc=progress, disable=None if progress else True, leave=False)
    for step, batch in enumerate(bar, start=1):
        try:
            with clock.step():
                result, fed = optimizer_step(trainer, data, batch, clock.mark)
        except Exception as err:  # a lost peer's collective error, an out-of-memory: say at which step
            raise StepFailed(step, steps, err) from err
        if after_step is not None:
            after_step(step)
        if result.outputs is not None and result.loss is not None:
            targets = fed.targets.to(result.outputs.device, non_blocking=True)
            losses.append(result.loss * len(targets))
            for key, value in data.tally(result.outputs, targets).items():
                tallies.setdefault(key, []).append(value)
            units += len(targets)
    return PassTotals(
        loss=_total(losses), tallies={key: _total(values) for key, values in tallies.items()}, units=float(units)
    )


def _total(values: list[Tensor]) -> float:
    """Sum of per-step scalars, read back to the host once."""
    return float(torch.stack(values).sum()) if values else 0.0


# ---- fit: the epoch loop (resume, run an epoch, evaluate, save) ----


@dataclass
class TrainResult:
    """What a finished run leaves: the model's state (on rank 0), per-epoch rows and kept step times."""

    state_dict: dict[str, Tensor]
    history: list[dict[str, float | None]]
    step_durations: list[float]
    steps_per_epoch: int
    resumed_after_epoch: int
    strategy_details: dict[str, Any]
    data_id: str
    peak_memory_mb: dict[str, float]


@dataclass
class Run:
    """A run in progress on this process: its trainer, clock, memory counter, history and checkpoint identity."""

    plan: RunPlan
    process: Process
    data: WorkloadData
    trainer: Trainer
    steps: int
    clock: StepClock
    memory: StepMemory
    history: list[dict[str, float | None]]
    run_id: str
    data_id: str
    checkpoint_path: Path


def fit(plan: RunPlan, process: Process, data: WorkloadData, checkpoint_path: Path, data_id: str) -> TrainResult:
    """Train for the planned epochs (resuming from the checkpoint of this run on the same data, `data_id` a digest
    of what it reads), scoring after each epoch and saving a checkpoint."""
    run, resumed_after = resume(plan, process, data, checkpoint_path, data_id)
    state: dict[str, Tensor] | None = None  # full_state_dict() may return {} off rank 0
    with progress_note(process, plan.settings.epochs, run.steps, resumed_after) as note:
        for epoch in range(len(run.history), plan.settings.epochs):
            try:
                totals, machine_load, durations = run_epoch(run, epoch, note)
            except KeyboardInterrupt:
                raise Interrupted(
                    f"during epoch {epoch + 1} of {plan.settings.epochs} ({last_checkpoint(epoch)})"
                ) from None
            state = run.trainer.parallel.full_state_dict()
            run.history.append(
                {
                    "epoch": epoch + 1,
                    **totals.means(),
                    **evaluate_epoch(run, state),
                    "step_time_s": sum(durations) / max(1, len(durations)),
                    "units_per_s": plan.global_batch * len(durations) / sum(durations) if durations else float("nan"),
                    "other_cpu_share": machine_load,
                }
            )
            save_epoch(run, epoch, state, note)
    if state is None:
        state = run.trainer.parallel.full_state_dict()
    return TrainResult(
        state_dict=state,
        history=run.history,
        step_durations=run.clock.durations,
        steps_per_epoch=run.steps,
        resumed_after_epoch=resumed_after,
        strategy_details=run.trainer.parallel.details.recorded(),
        data_id=data_id,
        peak_memory_mb=run.memory.peaks_mb,
    )


def resume(plan: RunPlan, process: Process, data: WorkloadData, checkpoint_path: Path, data_id: str) -> tuple[Run, int]:
    """The run ready to train: from the checkpoint of this very run on this very data when there is one (model,
    optimiser, schedule, history and kept step times), else from scratch; and the epoch it resumes after."""
    steps = steps_per_epoch(data.train_units, plan.global_batch)
    if steps == 0:
        raise ConfigError(
            f"scales.{plan.workload_name}.{plan.scale}: the training data holds {data.train_units} units, fewer than "
            f"one global batch of {plan.global_batch}; lower batch_size (or use scaling: strong) or train on more data."
        )
    run_id = checkpoint.fingerprint(checkpoint.run_description(plan))
    saved = checkpoint.load(checkpoint_path, run_id, data_id, process)
    trainer = build_trainer(plan, process, steps, saved["model"] if saved else None)
    if saved:
        trainer.optimizer.load_state_dict(saved["optimizers"][process.rank])
        if trainer.schedule is not None:
            trainer.schedule.load_state_dict(saved["schedules"][process.rank])
        if trainer.scaler is not None:
            trainer.scaler.load_state_dict(saved["scalers"][process.rank])
    clock = StepClock(trainer.parallel.devices, plan.settings.warmup_steps, kept=saved["durations"] if saved else None)
    run = Run(
        plan,
        process,
        data,
        trainer,
        steps,
        clock,
        StepMemory(trainer.parallel.devices),
        saved["history"] if saved else [],
        run_id,
        data_id,
        checkpoint_path,
    )
    return run, saved["epoch"] if saved else 0


class ProgressNote:
    """On rank 0, when the launcher asked for it ($PARABENCH_PROGRESS_FILE), a note of the last finished step and of
    what the checkpoint holds, so that a failed or interrupted job can say where it was even when no worker lived to
    say it.

    The file stays open over the run and each note overwrites the last in place: about 5 us, where writing the
    file anew took 0.2 ms on rank 0's path between steps, which the other ranks then wait for in the next step.
    """

    def __init__(self, path: str, epochs: int, steps: int, saved: int):
        self.descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        self.epochs, self.steps, self.saved = epochs, steps, saved
        self.epoch, self.step = saved, steps

    def finished(self, epoch: int, step: int) -> None:
        """Step `step` of epoch `epoch` (1-based) has finished."""
        self.epoch, self.step = epoch, step
        self._write()

    def checkpointed(self, epoch: int) -> None:
        """The checkpoint now holds `epoch` epochs."""
        self.saved = epoch
        self._write()

    def _write(self) -> None:
        text = f"epoch {self.epoch} of {self.epochs}, step {self.step} of {self.steps} ({last_checkpoint(self.saved)})"
        os.pwrite(self.descriptor, text.encode(), 0)
        os.ftruncate(self.descriptor, len(text.encode()))


@contextmanager
def progress_note(process: Process, epochs: int, steps: int, saved: int) -> Iterator[ProgressNote | None]:
    """The run's ProgressNote on rank 0 when the launcher asked for one, else None; `saved`: the epochs resumed."""
    path = os.environ.get(PROGRESS_ENV)
    if not process.is_main or not path:
        yield None
        return
    note = ProgressNote(path, epochs, steps, saved)
    try:
        yield note
    finally:
        os.close(note.descriptor)


def run_epoch(run: Run, epoch: int, note: ProgressNote | None) -> tuple[PassTotals, float | None, list[float]]:
    """One epoch's pass over this process's batches: the totals of every process, the largest CPU share other
    programs took meanwhile, and the step times kept (warm-up excluded); each step finished is noted (rank 0)."""
    plan, process, epochs = run.plan, run.process, run.plan.settings.epochs
    shard_index, shard_count = shard_of(plan, run.trainer.parallel, process)
    run.trainer.parallel.module.train()
    kept_before = len(run.clock.durations)
    started = load.mark()
    run.memory.reset()
    try:
        totals = train_pass(
            run.trainer,
            run.data,
            epoch_batches(run.data, plan.global_batch, shard_index, shard_count, plan.settings.seed, epoch),
            run.steps,
            run.clock,
            progress=f"epoch {epoch + 1}/{epochs}" if process.is_main else None,
            after_step=functools.partial(note.finished, epoch + 1) if note is not None else None,
        )
    except StepFailed as failed:
        raise RunStopped(f"stopped at epoch {epoch + 1} {failed}") from failed.error
    machine_load = load.job_other_cpu_share(started, load.mark())
    run.memory.read()
    every_rank: list[PassTotals] = gather_objects(totals)
    return PassTotals.combine(every_rank), machine_load, run.clock.durations[kept_before:]


def last_checkpoint(epochs_done: int) -> str:
    """What the checkpoint holds while epoch `epochs_done + 1` runs: one is saved after every epoch."""
    return f"the last checkpoint holds epoch {epochs_done}" if epochs_done else "no checkpoint yet"


def evaluate_epoch(run: Run, state: dict[str, Tensor]) -> dict[str, float]:
    """The workload's scores of the whole plain model after an epoch, computed by rank 0 and shared with all."""
    scores = epoch_scores(run.plan, run.data, state, run.process.device) if run.process.is_main else None
    shared = broadcast_object(scores)
    assert shared is not None, "rank 0 scored the epoch"
    return shared


def epoch_scores(plan: RunPlan, data: WorkloadData, state: dict[str, Tensor], device: torch.device) -> dict[str, float]:
    """The workload's epoch scores of the whole plain model, rebuilt from its state on `device`. On a CPU, with the
    threads of the node's every process: the others wait for the scores meanwhile."""
    model = plan.workload.model_holding(plan.settings, state)
    torch.set_num_threads(plan.machine.threads_per_process(1))
    try:
        return data.epoch_scores(model.to(device), device)
    finally:
        torch.set_num_threads(plan.threads)


def save_epoch(run: Run, epoch: int, state: dict[str, Tensor], note: ProgressNote | None) -> None:
    """Print the epoch's row and write the checkpoint (model, every rank's optimiser, schedule and loss scaler,
    history, step times) on rank 0, noting it."""
    trainer = run.trainer
    optimizers = gather_to_main(on_cpu(trainer.optimizer.state_dict()))
    schedules = gather_to_main(on_cpu(trainer.schedule.state_dict() if trainer.schedule is not None else None))
    scalers = gather_to_main(trainer.scaler.state_dict() if trainer.scaler is not None else None)
    if not run.process.is_main:
        return
    tqdm.write(
        f"epoch {epoch + 1}: "
        + ", ".join(
            f"{key} {value:.4g}" for key, value in run.history[-1].items() if key != "epoch" and value is not None
        )
    )
    checkpoint.save(
        run.checkpoint_path,
        {
            "fingerprint": run.run_id,
            "data": run.data_id,
            "epoch": epoch + 1,
            "model": state,
            "optimizers": optimizers,
            "schedules": schedules,
            "scalers": scalers,
            "history": run.history,
            "durations": run.clock.durations,
        },
    )
    if note is not None:
        note.checkpointed(epoch + 1)
