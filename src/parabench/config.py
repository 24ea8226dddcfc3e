"""The params.yaml schema: one place that validates every value, up front, and explains what is wrong."""

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from parabench.data.registry import DATASETS
from parabench.data.source import DataSource
from parabench.errors import ConfigError
from parabench.models.checkpointing import Checkpointing
from parabench.params_file import PARAMS_FILE, read_raw_params
from parabench.params_problems import SettingProblem, explain, non_finite_keys
from parabench.paths import prepared_dir
from parabench.runtime.hardware import Hardware
from parabench.strategies.options import (
    FsdpOptions,
    PartitionOptions,
    PipelineEngine,
    PipelineOptions,
    PipelineSchedule,
    Precision,
    StrategyName,
)
from parabench.workloads import WORKLOADS, TrainSettings
from parabench.workloads.contract import WorkloadName


class Strict(BaseModel):
    """A schema section that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Reference(Strict):
    """The run every speedup is measured against."""

    strategy: StrategyName


class PipelineParams(Strict):
    """params.yaml's `pipeline`: the engine, the schedule, and each workload's micro-batch size in its own units (a
    sample, or a few-shot episode of dozens of images)."""

    engine: PipelineEngine
    split_size: dict[str, Annotated[int, Field(ge=1)]]  # workload -> units per micro-batch, one entry per workload
    schedule: PipelineSchedule

    @field_validator("split_size")
    @classmethod
    def _every_workload_once(cls, sizes: dict[str, int]) -> dict[str, int]:
        """One micro-batch size for each workload, and only for workloads."""
        check_every_workload_once(sizes, "its units per micro-batch, at most its batch_size", lambda workload: "1")
        return sizes

    def for_workload(self, workload: str) -> PipelineOptions:
        """The options a workload's pipeline runs with: the engine, the schedule and its own micro-batch size."""
        return PipelineOptions(
            engine=self.engine,
            split_size=self.split_size[workload],
            schedule=self.schedule,
            split_size_key=f"pipeline.split_size.{workload}",
        )


class CellTiming(Strict):
    """How cells are timed (the benchmark's and a sweep's): each cell in workers of its own, set up and warmed up once,
    then every cell takes turns of `turn_steps` steps in rotating order, at least `min_turns`, then more while its
    speedup over single is not known within `within` (its 95% interval's half-width over it), at most `max_turns`
    and `max_timed_s` seconds of timed steps in the stage."""

    warmup_steps: Annotated[int, Field(ge=0)]  # steps each cell takes once, after its model is built, left out
    turn_steps: Annotated[int, Field(ge=1)]  # steps a cell takes each time its turn comes
    min_turns: Annotated[int, Field(ge=2)]  # turns every cell takes
    max_turns: Annotated[int, Field(ge=2)]  # the most turns, while a speedup is not yet known within `within`
    within: Annotated[float, Field(gt=0, lt=1)]  # e.g. 0.03: every speedup known within +-3%
    max_timed_s: Annotated[float, Field(gt=0)]  # the stage's timed steps, all cells together: no more turns beyond
    min_turn_s: Annotated[float, Field(ge=0)]  # a turn shorter than this (a GPU's steps): more steps a turn

    @model_validator(mode="after")
    def _max_not_below_min(self) -> "CellTiming":
        if self.max_turns < self.min_turns:
            raise ValueError(
                f"max_turns {self.max_turns} is below min_turns {self.min_turns}: set max_turns to at least "
                f"{self.min_turns}"
            )
        return self


RUN_SCALE = "run"  # benchmark.scale_on's word for params.yaml's own `scale`


class BenchmarkOptions(CellTiming):
    """The benchmark stage: which strategies, how their cells are timed, and at which scale on each accelerator (the
    benchmark's and the sweeps' cells: `run`, params.yaml's `scale`, or a scale's name)."""

    strategies: Annotated[list[StrategyName], Field(min_length=1)]
    scale_on: dict[Literal["cpu", "cuda"], str]

    @field_validator("strategies")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"{value} lists a strategy twice; list each once")
        return value


class GivenLink(Strict):
    """A link given by its numbers in params.yaml (predict.interconnect or predict.network), in place of a preset."""

    bandwidth_gb_per_s: Annotated[float, Field(gt=0)]  # per direction, 1 GB = 1e9 bytes
    latency_us: Annotated[float, Field(ge=0)]  # one message step (a ring's step), in microseconds
    source: str = "given in params.yaml"  # where the numbers come from: a datasheet, a measurement elsewhere


LinkChoice = Annotated[  # a link's name (measured, or a preset of prediction.py), or its numbers (a mapping)
    Annotated[str, Tag("name")] | Annotated[GivenLink, Tag("numbers")],
    Discriminator(lambda value: "numbers" if isinstance(value, dict | GivenLink) else "name"),
]


class PredictOptions(Strict):
    """What more devices would buy: the device counts to predict for and the links between them (prediction.py)."""

    devices: Annotated[list[Annotated[int, Field(ge=2)]], Field(min_length=1)]  # device counts to predict each step at
    devices_per_node: Annotated[int, Field(ge=1)]  # beyond this many devices, the network carries the all-reduce
    interconnect: LinkChoice  # between a node's devices: measured, a preset (engine/check.py checks it), or numbers
    network: LinkChoice  # between nodes: measured, a preset, or numbers
    probe_max_bytes: Annotated[int, Field(ge=4)]  # the collective probe's largest message


Values = Annotated[list[Any], Field(min_length=1)]


class Sweep(CellTiming):
    """One sweep: a workload under a strategy with one params key set to each value (one list, or a list per
    scale), once per curve (a curve's own overrides, e.g. another pipeline schedule, or `strategy`: the curve's own
    strategy, to sweep a knob across strategies), on the inputs it names; `single` and `model_parallel` are timed
    beside it as reference lines."""

    workload: WorkloadName
    strategy: StrategyName
    inputs: str  # what its cells read, as params.yaml `inputs` says for a workload (the stage's DVC dependency)
    param: str  # a dotted params.yaml key, e.g. pipeline.split_size.resnet50
    values: Values | dict[str, Values]  # the values to time, at every scale or per scale
    curves: Annotated[dict[str, dict[str, Any]], Field(min_length=1)]  # curve name -> its overrides (dotted keys)

    @field_validator("values", mode="before")
    @classmethod
    def _a_list_or_one_per_scale(cls, values: object) -> object:
        """One line for a malformed `values`, in the user's words: a non-empty list, or one per scale."""
        example = "a list such as [2, 4, 8], or a list per scale such as {quick: [2, 4, 8], paper: [1, 8, 120]}"
        if isinstance(values, dict):
            for scale, listed in values.items():
                if not isinstance(listed, list) or not listed:
                    raise SettingProblem(str(scale), f"{listed!r} is not a list of values to time; write {example}")
        elif not isinstance(values, list) or not values:
            raise ValueError(f"not a list of values to time; write {example}")
        return values

    @field_validator("curves")
    @classmethod
    def _file_names_and_strategies(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name, overrides in value.items():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                raise ValueError(f"curve name {name!r} becomes a file name: use letters, digits, '_', '.', '-'")
            if "strategy" in overrides and overrides["strategy"] not in get_args(StrategyName):
                raise ValueError(
                    f"curve {name}: strategy {overrides['strategy']!r} is none of {list(get_args(StrategyName))}"
                )
        return value

    @model_validator(mode="after")
    def _inputs_its_workload_reads(self) -> "Sweep":
        """The sweep's `inputs` is what its workload can read."""
        problem = unreadable(self.workload, self.inputs)
        if problem:
            raise SettingProblem("inputs", problem)
        return self

    def strategy_of(self, curve: str) -> str:
        """The strategy a curve's cells run: its own override, else the sweep's; a reference line is its strategy's."""
        if curve not in self.curves:
            return curve
        return str(self.curves[curve].get("strategy", self.strategy))

    def values_at(self, scale: str) -> list[Any] | None:
        """The values timed at `scale` (None when they are given per scale and this one has no list)."""
        return self.values.get(scale) if isinstance(self.values, dict) else self.values

    def cells(self, scale: str) -> list[tuple[str, Any, dict[str, Any]]]:
        """(curve, value, params overrides) of each of its cells at `scale`, curve after curve, value after value."""
        return [
            (curve, value, {self.param: value, **overrides})
            for curve, overrides in self.curves.items()
            for value in self.values_at(scale) or []
        ]


SCALE_FIELDS: dict[str, Any] = {
    name: (dict[str, workload.settings_model], ...)  # type: ignore[name-defined]  # a class known at run time
    for name, workload in WORKLOADS.items()
}
Scales = create_model("Scales", __base__=Strict, **SCALE_FIELDS)
DATASET_NAMES = sorted({workload.dataset for workload in WORKLOADS.values() if workload.dataset is not None})


class DownloadDeadline(Strict):
    """params.yaml's `data` beside its datasets' sources: how long a download stage may take."""

    timeout_s: Annotated[float, Field(gt=0)]  # one deadline for all of a download stage's fetches


DATA_FIELDS: dict[str, Any] = {name: (DATASETS[name].source_model, ...) for name in DATASET_NAMES}
DataSources = create_model("DataSources", __base__=DownloadDeadline, **DATA_FIELDS)


class Params(Strict):
    """The whole of params.yaml."""

    strategy: StrategyName
    accumulate: Annotated[int, Field(ge=1)] = 1  # micro-steps per optimiser step (gradient accumulation)
    precision: Precision = "32"  # what the forward computes in (autocast); the reference stays at 32
    activation_checkpointing: Checkpointing = "none"  # blocks: each block's forward recomputed in backward
    compile: bool = False  # torch.compile each of the model's blocks
    reference: Reference
    hardware: Hardware
    partition: PartitionOptions
    pipeline: PipelineParams
    fsdp: FsdpOptions = FsdpOptions()
    benchmark: BenchmarkOptions
    smallest_difference: Annotated[float, Field(ge=0, lt=1)]  # the least noise floor of a benchmark's verdicts
    predict: PredictOptions
    scale: str
    scales: Scales
    data: DataSources
    inputs: dict[str, str]  # the workloads dvc.yaml runs (its foreach), each -> what its stages read besides the code
    sweeps: dict[str, Sweep]

    @field_validator("inputs")
    @classmethod
    def _listed_workloads_read_what_they_can(cls, inputs: dict[str, str]) -> dict[str, str]:
        """The workloads to run (any of them, at least one), each naming what it can read."""
        check_workload_names(inputs)
        if not inputs:
            first = next(iter(WORKLOADS))
            raise ValueError(
                f"no workload to run: list at least one of {', '.join(WORKLOADS)}, e.g. "
                f"`{first}: {next(iter(input_choices(first)))}`"
            )
        for workload, value in inputs.items():
            problem = unreadable(workload, value)
            if problem:
                raise SettingProblem(workload, problem)
        return inputs

    @model_validator(mode="after")
    def _scales_and_micro_batches_fit(self) -> "Params":
        """The chosen scale exists for every workload and every sweep; each workload's micro-batch fits its batch
        (checked whatever the strategy, so that a later `-S strategy=pipeline` does not fail; under weak scaling the
        global batch only grows)."""
        for workload in WORKLOADS:
            by_scale = getattr(self.scales, workload)
            if self.scale not in by_scale:
                raise SettingProblem(
                    "scale",
                    f"{self.scale!r} is not defined for workload {workload!r}; choose one "
                    f"of: {', '.join(sorted(by_scale))} (keys of scales.{workload})",
                )
            split_size, batch_size = self.pipeline.split_size[workload], self.settings(workload).batch_size
            if split_size > batch_size:
                raise SettingProblem(
                    f"pipeline.split_size.{workload}",
                    f"{split_size} is larger than scales.{workload}.{self.scale}.batch_size: "
                    f"{batch_size}, so a micro-batch could never be filled (checked whatever the "
                    "strategy, so that a later `-S strategy=pipeline` does not fail); set it to at "
                    f"most {batch_size}",
                )
        defined = {workload: [RUN_SCALE, *getattr(self.scales, workload)] for workload in WORKLOADS}
        for accelerator, timed_at in self.benchmark.scale_on.items():
            missing = [workload for workload, scales in defined.items() if timed_at not in scales]
            if missing:
                raise SettingProblem(
                    f"benchmark.scale_on.{accelerator}",
                    f"{timed_at!r} is not defined for workload {missing[0]!r}; write {RUN_SCALE} (the scale "
                    f"params.yaml's `scale` names) or one of: {', '.join(sorted(getattr(self.scales, missing[0])))}",
                )
        for name, sweep in self.sweeps.items():
            if sweep.values_at(self.scale) is None:
                raise SettingProblem(
                    f"sweeps.{name}.values",
                    f"no list for scale {self.scale!r}; add one, give one "
                    "list for every scale, or choose a scale among "
                    f"{', '.join(sorted(sweep.values))}",
                )
        return self

    @model_validator(mode="after")
    def _several_nodes_meet_at_a_rendezvous(self) -> "Params":
        """hardware.nodes above 1 names where the nodes meet (hardware.rendezvous)."""
        if self.hardware.nodes > 1 and self.hardware.rendezvous is None:
            raise SettingProblem(
                "hardware.nodes",
                f"{self.hardware.nodes} needs hardware.rendezvous: the host:port of "
                "this node (node 0), which the other nodes can reach, e.g. 10.0.0.1:29400; or set "
                "hardware.nodes: 1",
            )
        return self

    def timing_scale(self, accelerator: str) -> str:
        """The scale the benchmark's and the sweeps' cells are timed at on `accelerator` (benchmark.scale_on): on a
        GPU the quick scale's steps are Python's launches, not the strategy's work (7-40 ms on an H200)."""
        timed_at = self.benchmark.scale_on.get(accelerator, RUN_SCALE)  # type: ignore[call-overload]
        return self.scale if timed_at == RUN_SCALE else timed_at

    def settings(self, workload: str) -> TrainSettings:
        """The hyper-parameters of `workload` at the chosen scale."""
        settings: TrainSettings = getattr(self.scales, workload)[self.scale]
        return settings

    def sweep(self, name: str) -> Sweep:
        """The sweep `name` (a stage's argument), or an error listing the sweeps there are."""
        if name not in self.sweeps:
            raise ConfigError(
                f"{PARAMS_FILE}: sweeps has no entry {name!r}; the sweeps are: {', '.join(self.sweeps) or 'none'}."
            )
        return self.sweeps[name]

    def dataset_read(self, workload: str) -> str | None:
        """The prepared dataset a workload's runs read (`inputs`); None when it draws its own data."""
        return input_choices(workload)[self.inputs[workload]]

    def data_source(self, dataset: str) -> DataSource:
        """A dataset's params section: where it comes from (`download` or a local folder), and its options."""
        source: DataSource = getattr(self.data, dataset)
        return source


def check_every_workload_once(entries: dict[str, Any], why: str, example: Callable[[str], str]) -> None:
    """A per-workload mapping names each workload and only workloads (`why` every workload needs an entry; `example`:
    a value to suggest for a missing one)."""
    check_workload_names(entries)
    missing = [name for name in WORKLOADS if name not in entries]
    if missing:
        raise ValueError(
            f"no entry for {', '.join(missing)}: every workload needs one ({why}); add e.g. "
            f"`{missing[0]}: {example(missing[0])}`"
        )


def check_workload_names(entries: dict[str, Any]) -> None:
    """Every key of a per-workload mapping names a workload."""
    unknown = [name for name in entries if name not in WORKLOADS]
    if unknown:
        raise ValueError(f"{', '.join(unknown)} names no workload; the workloads are {', '.join(WORKLOADS)}")


def input_choices(workload: str) -> dict[str, str | None]:
    """What a workload's stages may read (params.yaml `inputs`): path -> the prepared dataset, or None for the file
    that draws a synthetic workload's data. A dataset's workload reads its own; a synthetic one reads its random
    data, or any prepared dataset's training images (real pixels)."""
    own, generator_file = WORKLOADS[workload].dataset, WORKLOADS[workload].generator_file
    if own is not None:
        return {prepared_dir(own).as_posix(): own}
    drawn: dict[str, str | None] = {} if generator_file is None else {generator_file: None}
    return {**drawn, **{prepared_dir(dataset).as_posix(): dataset for dataset in sorted(DATASETS)}}


def unreadable(workload: str, value: str) -> str | None:
    """Why `workload` cannot read `value` (an `inputs` entry), with its choices; None when it can."""
    choices = input_choices(workload)
    if value in choices:
        return None
    described = [
        f"{choice} ({'that dataset' if dataset else 'random data drawn from the seed'})"
        for choice, dataset in choices.items()
    ]
    return f"{value!r} is not what {workload} can read; choose one of: {', '.join(described)}"


def load_params(path: Path = PARAMS_FILE) -> Params:
    """Read and validate params.yaml, every sweep's cells included; every problem becomes one ConfigError naming
    key, value and fix."""
    raw = read_raw_params(path)
    params = validate_params(raw, str(path))
    for name, sweep in params.sweeps.items():
        _check_sweep_cells(str(path), raw, name, sweep, params.scale)
    return params


def validate_params(raw: dict[str, Any], where: str) -> Params:
    """Validate plain params values; `where` names their origin (the file, plus any overrides) in errors."""
    infinite = non_finite_keys(raw)
    if infinite:
        raise ConfigError(
            f"{where}: {', '.join(infinite)}: inf and nan are not valid values for any setting; write a finite number."
        )
    try:
        params = Params.model_validate(raw, strict=True)  # strict: YAML's true is not 1, 1.5 is not a whole number
    except ValidationError as err:
        raise ConfigError(explain(where, err, Params)) from None
    return params


def with_overrides(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A copy of plain params values with dotted keys replaced, e.g. {"pipeline.split_size.resnet50": 12}."""
    changed = copy.deepcopy(raw)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        section = changed
        for key in parents:
            if not isinstance(section.get(key), dict):
                raise ConfigError(
                    f"override {dotted}={value!r}: params.yaml has no section {key!r} there; "
                    "check the key's spelling against params.yaml."
                )
            section = section[key]
        section[leaf] = value
    return changed


def sweep_params(raw: dict[str, Any], sweep: Sweep) -> dict[str, Any]:
    """Plain params values as a sweep's cells see them: its workload reading the sweep's own inputs."""
    return with_overrides(raw, {f"inputs.{sweep.workload}": sweep.inputs})


def _check_sweep_cells(path: str, raw: dict[str, Any], name: str, sweep: Sweep, scale: str) -> None:
    """Each of a sweep's cells, its value and its curve's overrides applied to params.yaml, is valid params: a value
    that could never run (a split size above the batch, a string for a number) stops here, not minutes into it."""
    base = sweep_params(raw, sweep)
    for _, _, overrides in sweep.cells(scale):
        validate_params(with_overrides(base, overrides), f"{path} (sweeps.{name}, the cell {overrides})")
