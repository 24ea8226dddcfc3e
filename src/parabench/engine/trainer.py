"""The model a strategy made ready, with the workload's optimiser and schedule; one optimiser step through it."""

from dataclasses import dataclass

import torch
from torch import Tensor

from parabench.batch import Batch
from parabench.engine.plan import RunPlan
from parabench.runtime.process import Process
from parabench.strategies.base import Parallelized, StepResult
from parabench.workloads import WorkloadData


@dataclass(frozen=True)
class Trainer:
    """What one training step needs: the parallelised model, its optimiser and its learning-rate schedule."""

    parallel: Parallelized
    optimizer: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LRScheduler | None


def build_trainer(plan: RunPlan, process: Process, steps_per_epoch: int,
                  model_state: dict[str, Tensor] | None = None) -> Trainer:
    """Seed, build the plain model (from `model_state`, or initialised by the workload), apply the strategy,
    then the workload's optimiser over its parameter groups, named as in the plain model, and its schedule over
    the run's epochs of `steps_per_epoch` steps."""
    workload, settings = plan.workload, plan.settings
    torch.manual_seed(settings.seed)
    model = workload.build_model(settings)
    if model_state is None:
        workload.initialize(model, settings)
    else:
        model.load_state_dict(model_state)
    parallel = plan.strategy.apply(model, process, plan.setup)
    groups = workload.param_groups(parallel.named_parameters(), settings)
    optimizer = workload.optimizer([{"params": group.params, "lr": plan.lr * group.lr_scale} for group in groups],
                                   settings)
    return Trainer(parallel, optimizer, workload.lr_schedule(optimizer, settings, steps_per_epoch))


def optimizer_step(trainer: Trainer, data: WorkloadData, batch: Batch) -> tuple[StepResult, Tensor]:
    """Batch to the strategy's device and through the workload's transform (where this process reads the inputs),
    forward and backward through the strategy, the update and the schedule; returns the step's result and the targets
    it was scored against (a transform never changes them)."""
    batch = batch.to(trainer.parallel.input_device)
    if trainer.parallel.reads_inputs:
        batch = data.transform(batch)
    trainer.optimizer.zero_grad(set_to_none=True)
    result = trainer.parallel.train_step(batch, data.loss)
    trainer.optimizer.step()
    if trainer.schedule is not None:
        trainer.schedule.step()
    return result, batch.targets
