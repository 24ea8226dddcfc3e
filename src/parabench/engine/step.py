"""One optimiser step through a strategy, and the model and optimiser it needs: shared by training and benchmarks."""

import torch
from torch import Tensor

from parabench.engine.distributed import Process
from parabench.engine.plan import RunPlan
from parabench.strategies.base import Parallelized, StepResult


def prepare(plan: RunPlan, process: Process, model_state: dict[str, Tensor] | None = None
            ) -> tuple[Parallelized, torch.optim.Optimizer]:
    """Build the seeded model (from `model_state` if given), apply the strategy, make its SGD optimiser."""
    torch.manual_seed(plan.settings.seed)
    model = plan.workload.build_model(plan.settings)
    if model_state is not None:
        model.load_state_dict(model_state)
    parallel = plan.strategy.apply(model, process, plan.setup)
    settings = plan.settings
    optimizer = torch.optim.SGD(
        parallel.module.parameters(), lr=plan.lr, momentum=settings.momentum, weight_decay=settings.weight_decay
    )
    return parallel, optimizer


def optimizer_step(plan: RunPlan, parallel: Parallelized, optimizer: torch.optim.Optimizer,
                   images: Tensor, labels: Tensor) -> StepResult:
    """Inputs to the strategy's device, forward and backward through the strategy, then the update."""
    inputs = plan.workload.to_inputs(images.to(parallel.input_device, non_blocking=True))
    optimizer.zero_grad(set_to_none=True)
    result = parallel.train_step(inputs, labels, plan.workload.loss)
    optimizer.step()
    return result

