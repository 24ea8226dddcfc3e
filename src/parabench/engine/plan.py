"""A run plan: params.yaml plus the machine, resolved into exact numbers, checked before any heavy work."""

from dataclasses import dataclass

import torch

from parabench.config import PARAMS_FILE, Params
from parabench.engine.hardware import Machine, resolve
from parabench.errors import ConfigError
from parabench.paths import ROLES
from parabench.strategies import STRATEGIES, Strategy
from parabench.strategies.base import StrategySetup
from parabench.workloads import WORKLOADS, TrainSettings, Workload


@dataclass(frozen=True)
class RunPlan:
    """One training run: which workload and strategy, on what, with which batch and learning rate."""

    role: str
    workload: Workload
    strategy: Strategy
    setup: StrategySetup
    settings: TrainSettings
    processes: int
    replicas: int
    global_batch: int
    lr: float

    def describe(self) -> dict[str, str | int | float]:
        """The run's identity in plain values: workload, strategy, processes, batch and learning rate."""
        return {
            "workload": self.workload.name,
            "strategy": self.strategy.name,
            "processes": self.processes,
            "devices": self.strategy.devices(self.setup),
            "replicas": self.replicas,
            "global_batch": self.global_batch,
            "lr": self.lr,
        }

    @property
    def machine(self) -> Machine:
        """The resolved hardware."""
        return self.setup.machine

    @property
    def processes_per_node(self) -> int:
        """Worker processes on this node."""
        return self.strategy.processes_per_node(self.setup)

    @property
    def distributed(self) -> bool:
        """Whether torchrun launches the workers and they join a process group."""
        return self.strategy.distributed(self.setup)

    @property
    def threads(self) -> int:
        """Threads per process."""
        return self.machine.threads_per_process(self.processes_per_node)


STRATEGY_KEYS = {"train": "strategy", "reference": "reference.strategy", "benchmark": "benchmark.strategies"}


def strategy_key(role: str) -> str:
    """The params.yaml key that picks the strategy of a role."""
    return STRATEGY_KEYS[role]


def make_plan(params: Params, workload_name: str, role: str, machine: Machine | None = None,
              strategy_name: str | None = None) -> RunPlan:
    """Resolve one run; raise ConfigError or StrategyUnavailable with the key to change.

    The strategy is the role's (`strategy` for train, `reference.strategy` for reference) unless
    `strategy_name` names one (the benchmark runs each of its list).
    """
    machine = machine or resolve(params.hardware)
    _check_machine(machine)
    if strategy_name is None:
        strategy_name = params.strategy if role == "train" else params.reference.strategy
    strategy = STRATEGIES[strategy_name]
    settings = params.settings(workload_name)
    workload = WORKLOADS[workload_name]
    setup = StrategySetup(
        machine=machine,
        partition=params.partition,
        pipeline=params.pipeline,
        blocks=len(workload.build_model(settings)),
        sample_shape=(settings.batch_size, *workload.input_shape),
    )
    replicas = strategy.data_replicas(setup)
    if settings.scaling == "weak":
        global_batch, lr = settings.batch_size * replicas, settings.lr * replicas
    else:
        global_batch, lr = settings.batch_size, settings.lr
        if global_batch % replicas:
            raise ConfigError(
                f"{PARAMS_FILE}: scales.{workload_name}.{params.scale}.batch_size: {global_batch} does not divide "
                f"evenly among the {replicas} data-parallel replicas of {strategy_key(role)}={strategy.name}; "
                f"pick a multiple of {replicas}, change hardware.devices, or set scaling: weak (batch_size per "
                "replica)."
            )
    strategy.check(setup, global_batch)
    return RunPlan(
        role=role,
        workload=workload,
        strategy=strategy,
        setup=setup,
        settings=settings,
        processes=strategy.processes(setup),
        replicas=replicas,
        global_batch=global_batch,
        lr=lr,
    )


def check_all(params: Params) -> None:
    """Plan every run the pipeline will make, so a bad value stops the first stage, not the fifth."""
    machine = resolve(params.hardware)
    for workload_name in WORKLOADS:
        for role in ROLES:
            make_plan(params, workload_name, role, machine)


def _check_machine(machine: Machine) -> None:
    if machine.nodes > 1:
        raise ConfigError(
            f"{PARAMS_FILE}: hardware.nodes: {machine.nodes}, but multi-node runs are not supported yet; set it to 1."
        )
    if machine.accelerator == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"{PARAMS_FILE}: hardware.accelerator: 'cuda' but torch sees no CUDA device here; "
            "set it to auto or cpu."
        )
    if machine.accelerator == "cpu" and machine.backend == "nccl":
        raise ConfigError(f"{PARAMS_FILE}: hardware.backend: 'nccl' needs CUDA; set it to auto or gloo on the CPU.")
