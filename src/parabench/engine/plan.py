"""A run plan: params.yaml plus the machine, resolved into exact numbers and checked before any heavy work.

The launcher makes the plan once and hands it to every worker as JSON; a worker never plans again.
"""

import functools
import importlib.util
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, SerializeAsAny, ValidationInfo, field_validator

from parabench.config import Params
from parabench.errors import ConfigError, StrategyUnavailable
from parabench.io import tree_digest, write_atomic
from parabench.models.checkpointing import Checkpointing
from parabench.params_file import PARAMS_FILE
from parabench.paths import prepared_dir
from parabench.records import RunIdentity
from parabench.runtime.hardware import Machine, resolve
from parabench.strategies.base import Strategy, StrategySetup
from parabench.strategies.registry import STRATEGIES
from parabench.workloads import WORKLOADS, TrainSettings, Workload, WorkloadData

log = logging.getLogger("parabench.plan")
Role = Literal["train", "reference", "benchmark"]
STRATEGY_KEYS = {"train": "strategy", "reference": "reference.strategy", "benchmark": "benchmark.strategies"}


class RunPlan(BaseModel):
    """One run: workload, strategy, machine, batch and learning rate, and how many side-by-side copies.

    `copies` > 1 runs that many independent copies of the strategy at once, each on its share of every
    global batch and with no communication: the benchmark's measure of what the shared machine allows.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    workload_name: str
    strategy_name: str
    dataset: str | None  # the prepared dataset the run reads (params.yaml `inputs`); None: the workload draws its data
    scale: str
    settings: SerializeAsAny[TrainSettings]
    setup: StrategySetup
    replicas: int
    global_batch: int
    lr: float
    accumulate: int = 1  # micro-steps per optimiser step
    activation_checkpointing: Checkpointing = "none"  # blocks: recompute each block's forward in backward
    compile: bool = False  # torch.compile each block
    copies: int = 1

    @field_validator("settings", mode="before")
    @classmethod
    def _settings_of_the_workload(cls, value: Any, info: ValidationInfo) -> TrainSettings:
        model = WORKLOADS[info.data["workload_name"]].settings_model
        return value if isinstance(value, model) else model.model_validate(value)

    @property
    def workload(self) -> Workload[Any]:
        """The workload the plan trains."""
        return WORKLOADS[self.workload_name]

    @property
    def strategy(self) -> Strategy:
        """The strategy the plan applies."""
        return STRATEGIES[self.strategy_name]

    @property
    def machine(self) -> Machine:
        """The resolved hardware."""
        return self.setup.machine

    @property
    def processes_per_node(self) -> int:
        """Worker processes on this node."""
        return self.strategy.processes_per_node(self.setup) * self.copies

    @property
    def processes(self) -> int:
        """Worker processes in the whole job."""
        return self.strategy.processes(self.setup) * self.copies

    @property
    def devices(self) -> int:
        """Devices the run uses: what scaling efficiency divides by."""
        return self.strategy.devices(self.setup) * self.copies

    @property
    def distributed(self) -> bool:
        """Whether torchrun launches the workers and they join a process group."""
        return self.strategy.distributed(self.setup) or self.copies > 1

    @property
    def threads(self) -> int:
        """Threads per process."""
        return self.machine.threads_per_process(self.processes_per_node)

    def describe(self) -> RunIdentity:
        """The run's identity in plain values: workload, strategy, processes, devices, batch, learning rate."""
        return RunIdentity(
            workload=self.workload_name,
            strategy=self.strategy_name,
            processes=self.processes,
            devices=self.devices,
            replicas=self.replicas,
            global_batch=self.global_batch,
            lr=self.lr,
            accumulate=self.accumulate,
            precision=self.setup.precision,
            activation_checkpointing=self.activation_checkpointing,
            compile=self.compile,
        )

    @property
    def prepared_folder(self) -> Path | None:
        """The prepared dataset folder the run reads (None when its workload draws its own data)."""
        return prepared_dir(self.dataset) if self.dataset else None

    def open_data(self) -> WorkloadData:
        """The run's workload data, from its prepared folder (none for synthetic workloads)."""
        return self.workload.open(self.prepared_folder, self.settings)

    def data_identity(self) -> str:
        """A digest of the bytes the run trains on: its prepared folder, or the file that draws its synthetic data."""
        if self.prepared_folder is not None:
            return tree_digest(self.prepared_folder)
        assert self.workload.generator_file is not None, "a workload without a dataset names the file of its data"
        return tree_digest(Path(self.workload.generator_file))

    def save(self, path: Path) -> None:
        """Write the plan as JSON for the workers."""
        write_atomic(path, lambda tmp: tmp.write_text(self.model_dump_json(indent=1)))

    @classmethod
    def load(cls, path: Path) -> "RunPlan":
        """The plan the launcher wrote."""
        return cls.model_validate_json(path.read_text())


def strategy_of(params: Params, role: Role) -> str:
    """The strategy a role trains with: `strategy` for train, `reference.strategy` for reference."""
    return str(params.strategy if role == "train" else params.reference.strategy)


def make_plan(
    params: Params,
    workload_name: str,
    role: Role,
    strategy_name: str | None = None,
    machine: Machine | None = None,
    copies: int = 1,
) -> RunPlan:
    """Resolve one run; raise ConfigError or StrategyUnavailable naming the key to change.

    The strategy is the role's unless `strategy_name` names one (the benchmark runs each of its list).
    """
    machine = machine or resolve(params.hardware)
    _check_machine(machine)
    knobbed = role != "reference"  # the training knobs: the reference takes none, so that each is measured against it
    strategy = STRATEGIES[strategy_name or strategy_of(params, role)]
    settings = params.settings(workload_name)
    setup = strategy_setup(params, workload_name, machine, knobbed)
    if params.hardware.devices == "auto" and settings.scaling == "strong":
        run = f"{workload_name}'s {STRATEGY_KEYS[role]}={strategy.name}" + (f" x {copies} copies" if copies > 1 else "")
        if copies == 1:
            setup = devices_sharing_the_batch(setup, strategy, run)
        else:
            copies = copies_sharing_the_batch(settings.batch_size, copies, run)
    replicas = strategy.data_replicas(setup) * copies
    global_batch, lr = batch_and_lr(params, workload_name, replicas, f"{STRATEGY_KEYS[role]}={strategy.name}")
    strategy.check(setup, global_batch)
    accumulate = params.accumulate if knobbed else 1
    check_accumulate(accumulate, strategy, global_batch // replicas, workload_name)
    compiled = knobbed and params.compile
    if compiled:
        check_compile(strategy, machine)
    plan = RunPlan(
        role=role,
        workload_name=workload_name,
        strategy_name=strategy.name,
        dataset=params.dataset_read(workload_name),
        scale=params.scale,
        settings=settings,
        setup=setup,
        replicas=replicas,
        global_batch=global_batch,
        lr=lr,
        accumulate=accumulate,
        activation_checkpointing=params.activation_checkpointing if knobbed else "none",
        compile=compiled,
        copies=copies,
    )
    _check_processes_fit(plan, params.hardware.oversubscribe)
    return plan


def strategy_setup(params: Params, workload_name: str, machine: Machine, knobbed: bool) -> StrategySetup:
    """What the strategy may read of a workload's run: the machine, the strategies' sections, the model's blocks and
    batch shape, the documented cut, and the precision (the training knobs only where `knobbed`: not the reference)."""
    settings = params.settings(workload_name)
    workload = WORKLOADS[workload_name]
    return StrategySetup(
        machine=machine,
        partition=params.partition,
        pipeline=params.pipeline.for_workload(workload_name),
        fsdp=params.fsdp,
        blocks=model_blocks(workload_name, settings),
        batch_shape=(settings.batch_size, *workload.unit_shape(settings)),
        documented_cut=workload.documented_cut(settings),
        precision=params.precision if knobbed else "32",
    )


def check_accumulate(accumulate: int, strategy: Strategy, per_replica: int, workload_name: str) -> None:
    """Gradient accumulation composes with every strategy whose step can be cut into micro-steps
    (`Strategy.accumulates`), and must cut each replica's share of the batch evenly."""
    if accumulate == 1:
        return
    if not strategy.accumulates:
        raise ConfigError(
            f"accumulate: {accumulate} does not compose with strategy {strategy.name}: its step already cuts the "
            f"batch into micro-batches (pipeline.split_size) and its schedule runs their backward; set accumulate: 1"
        )
    if per_replica % accumulate:
        divisors = [k for k in range(1, accumulate) if per_replica % k == 0]
        raise ConfigError(
            f"accumulate: {accumulate} does not divide the {per_replica} unit(s) each replica gets of "
            f"{workload_name}'s batch under strategy {strategy.name}; set accumulate to a divisor of {per_replica}, "
            f"e.g. {divisors[-1]}, raise scales.{workload_name}.<scale>.batch_size, or leave {workload_name} out of "
            f"this experiment (dvc exp run -S '~inputs.{workload_name}')"
        )


def check_compile(strategy: Strategy, machine: Machine) -> None:
    """torch.compile needs its backend's compiler here (a C++ compiler on the CPU, Triton on CUDA), and a strategy it
    composes with (Strategy.refuses_compile says why not)."""
    if strategy.refuses_compile:
        raise ConfigError(
            f"compile: true does not compose with strategy {strategy.name}: {strategy.refuses_compile}; choose "
            "another strategy (dvc exp run -S strategy=ddp), or set compile: false"
        )
    if machine.accelerator == "cpu" and not any(shutil.which(name) for name in ("g++", "c++", "clang++")):
        raise ConfigError(
            "compile: true needs a C++ compiler for torch.compile's CPU backend (inductor), and none of g++, c++, "
            "clang++ is on PATH: install one (e.g. apt install g++), or set compile: false"
        )
    if machine.accelerator == "cuda" and importlib.util.find_spec("triton") is None:
        raise ConfigError(
            "compile: true needs Triton for torch.compile's CUDA backend, and this Python has none: install the "
            "triton that matches your torch, or set compile: false"
        )


def batch_and_lr(params: Params, workload_name: str, replicas: int, run: str) -> tuple[int, float]:
    """The global batch and learning rate of a run with `replicas` data-parallel replicas: under weak scaling both
    grow with them; under strong scaling the batch must divide among them."""
    settings = params.settings(workload_name)
    if settings.scaling == "weak":
        return settings.batch_size * replicas, settings.lr * replicas
    if settings.batch_size % replicas:
        key = f"scales.{workload_name}.{params.scale}.batch_size"
        multiple = -(-settings.batch_size // replicas) * replicas
        raise ConfigError(
            f"{PARAMS_FILE}: {key}: {settings.batch_size} does not divide evenly among the {replicas} data-parallel "
            f"replicas of {run}; pick a multiple of {replicas} (e.g. `dvc exp run -S {key}={multiple}`), change "
            "hardware.devices, or set scaling: weak (batch_size per replica)."
        )
    return settings.batch_size, settings.lr


def devices_sharing_the_batch(setup: StrategySetup, strategy: Strategy, run: str) -> StrategySetup:
    """`hardware.devices: auto` under strong scaling: a data-parallel strategy takes, of the node's devices, the most
    among whose replicas the global batch divides (say so when that is fewer than all); a batch that no count
    divides is left to the plan's error."""

    def on(devices: int) -> StrategySetup:
        """The setup with `devices` per node."""
        return setup.model_copy(update={"machine": setup.machine.model_copy(update={"devices": devices})})

    batch, most = setup.batch_shape[0], setup.machine.devices
    devices = most_dividing(batch, most, lambda count: strategy.data_replicas(on(count)))
    if devices is None:
        return setup
    if devices < most:
        warn_once(
            f"{run}: the global batch of {batch} divides among at most {strategy.data_replicas(on(devices))} "
            f"data-parallel replicas, so it runs on {devices} of each node's {most} devices "
            f"(hardware.devices: auto); a batch_size that is a multiple of {strategy.data_replicas(setup)} "
            "would use them all."
        )
    return on(devices)


def copies_sharing_the_batch(batch: int, copies: int, run: str) -> int:
    """The benchmark's side-by-side copies under `devices: auto`: as many as the data-parallel runs use, the most
    among which the batch divides (at least 2: one copy is `single` itself)."""
    fitting = most_dividing(batch, copies, lambda count: count) or 1
    if fitting < 2:
        raise StrategyUnavailable(
            f"{run}: the global batch of {batch} divides among no 2 to {copies} side-by-side "
            "copies; set the workload's batch_size to an even number to time them."
        )
    if fitting < copies:
        warn_once(
            f"{run}: the global batch of {batch} divides among at most {fitting} copies, so {fitting} run side "
            f"by side (hardware.devices: auto), as many as its data-parallel runs use."
        )
    return fitting


def most_dividing(batch: int, most: int, replicas_of: Callable[[int], int]) -> int | None:
    """The largest count from `most` down to 1 among whose `replicas_of(count)` replicas the batch divides; None
    when none does."""
    return next((count for count in range(most, 0, -1) if batch % replicas_of(count) == 0), None)


@functools.cache
def warn_once(warning: str) -> None:
    """Log a warning once per process, however many times the same run is planned."""
    log.warning(warning)


@functools.cache
def model_blocks(workload_name: str, settings: TrainSettings) -> int:
    """How many ordered blocks the workload's model has with these settings (built once per settings, on the meta
    device: shapes without weights, so ResNet-50's 25 million parameters are not drawn to be counted)."""
    with torch.device("meta"):
        return len(WORKLOADS[workload_name].build_model(settings))


def _check_processes_fit(plan: RunPlan, oversubscribe: bool) -> None:
    """On the CPU, a node starts no more worker processes than it has cores (unless hardware.oversubscribe)."""
    machine = plan.machine
    if machine.accelerator == "cpu" and plan.processes_per_node > machine.cores and not oversubscribe:
        raise ConfigError(
            f"{PARAMS_FILE}: hardware.devices: {machine.devices} makes {STRATEGY_KEYS[plan.role]}={plan.strategy_name} "
            f"start {plan.processes_per_node} worker processes on this node's {machine.cores} CPU cores: each would "
            "get a fraction of a core and the timings would measure contention; set hardware.devices to at most "
            f"{machine.cores}, or hardware.oversubscribe: true to run anyway."
        )


def _check_machine(machine: Machine) -> None:
    """The rules about this machine: the accelerator and device count it has, and a backend that serves them."""
    if machine.accelerator == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"{PARAMS_FILE}: hardware.accelerator: 'cuda' but torch sees no CUDA device here; set it to auto or cpu."
        )
    if machine.accelerator == "cuda" and machine.devices > torch.cuda.device_count():
        raise ConfigError(
            f"{PARAMS_FILE}: hardware.devices: {machine.devices} GPUs per node, but this node has "
            f"{torch.cuda.device_count()}: every strategy (and the benchmark's side-by-side copies of single) uses one "
            f"GPU per device; set hardware.devices to at most {torch.cuda.device_count()}, or auto."
        )
    if machine.accelerator == "cuda" and machine.backend == "gloo":
        raise ConfigError(
            f"{PARAMS_FILE}: hardware.backend: 'gloo' with CUDA: gloo cannot reduce-scatter (fsdp) or send and "
            "receive (pipeline) CUDA tensors, so those strategies would fail at their first step; set "
            "hardware.backend to auto or nccl, or hardware.accelerator to cpu."
        )
    if machine.accelerator == "cpu" and machine.backend == "nccl":
        raise ConfigError(f"{PARAMS_FILE}: hardware.backend: 'nccl' needs CUDA; set it to auto or gloo on the CPU.")
