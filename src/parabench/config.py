"""The params.yaml schema: one place that validates every value, up front, and explains what is wrong."""

import copy
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from parabench.data.registry import DATASETS
from parabench.data.source import DataSource
from parabench.errors import ConfigError
from parabench.inputs import check_input_choice, check_inputs, input_choices
from parabench.params_problems import explain, non_finite_keys
from parabench.runtime.hardware import Hardware
from parabench.strategies import STRATEGIES
from parabench.strategies.options import PartitionOptions, PipelineOptions
from parabench.workloads import WORKLOADS, TrainSettings

PARAMS_FILE = Path("params.yaml")
STRATEGY_NAMES = tuple(STRATEGIES)
WORKLOAD_NAMES = tuple(WORKLOADS)


class Strict(BaseModel):
    """A schema section that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Reference(Strict):
    """The run every speedup is measured against."""

    strategy: Literal[STRATEGY_NAMES]  # type: ignore[valid-type]


class PipelineParams(PipelineOptions):
    """params.yaml's `pipeline`: the pipeline options, with micro-batch sizes that some workloads set for themselves.

    split_size counts units: a few-shot episode holds dozens of images, so `split_sizes` may give it its own.
    """

    split_sizes: dict[str, Annotated[int, Field(ge=1)]]

    @field_validator("split_sizes")
    @classmethod
    def _known_workloads(cls, value: dict[str, int]) -> dict[str, int]:
        unknown = sorted(set(value) - set(WORKLOADS))
        if unknown:
            raise ValueError(f"names no workload: {', '.join(unknown)}; the workloads are {', '.join(WORKLOADS)}")
        return value

    def for_workload(self, workload: str) -> PipelineOptions:
        """The options a workload's pipeline runs with."""
        return PipelineOptions(engine=self.engine, split_size=self.split_sizes.get(workload, self.split_size),
                               schedule=self.schedule)


class BenchmarkOptions(Strict):
    """The benchmark stage: which strategies, how many interleaved rounds, warm-up and timed steps per run."""

    strategies: Annotated[list[Literal[STRATEGY_NAMES]], Field(min_length=1)]  # type: ignore[valid-type]
    rounds: Annotated[int, Field(ge=1)]
    warmup_steps: Annotated[int, Field(ge=0)]
    timed_steps: Annotated[int, Field(ge=1)]

    @field_validator("strategies")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"{value} lists a strategy twice; list each once")
        return value


Values = Annotated[list[Any], Field(min_length=1)]


class Sweep(Strict):
    """One sweep: a workload under a strategy with one params key set to each value (one list, or a list per
    scale), once per curve (a curve's own overrides, e.g. another pipeline schedule), on the inputs it names;
    `single` and `model_parallel` are timed beside it as reference lines."""

    workload: Literal[WORKLOAD_NAMES]  # type: ignore[valid-type]
    strategy: Literal[STRATEGY_NAMES]  # type: ignore[valid-type]
    inputs: str  # what its cells read, as params.yaml `inputs` says for a workload (the stage's DVC dependency)
    param: str  # a dotted params.yaml key, e.g. pipeline.split_sizes.resnet50
    values: Values | dict[str, Values]  # the values to time, at every scale or per scale
    curves: Annotated[dict[str, dict[str, Any]], Field(min_length=1)]  # curve name -> its overrides (dotted keys)
    rounds: Annotated[int, Field(ge=1)]  # each round times every cell once, in rotating order
    warmup_steps: Annotated[int, Field(ge=0)]  # steps per run left out of the timing
    timed_steps: Annotated[int, Field(ge=1)]  # timed steps per run

    @field_validator("curves")
    @classmethod
    def _file_names(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                raise ValueError(f"curve name {name!r} becomes a file name: use letters, digits, '_', '.', '-'")
        return value

    def values_at(self, scale: str) -> list[Any] | None:
        """The values timed at `scale` (None when they are given per scale and this one has no list)."""
        return self.values.get(scale) if isinstance(self.values, dict) else self.values

    def cells(self, scale: str) -> list[tuple[str, Any, dict[str, Any]]]:
        """(curve, value, params overrides) of each of its cells at `scale`, curve after curve, value after value."""
        return [(curve, value, {self.param: value, **overrides}) for curve, overrides in self.curves.items()
                for value in self.values_at(scale) or []]


Scales = create_model(
    "Scales",
    __base__=Strict,
    **{name: (dict[str, workload.settings_model], ...) for name, workload in WORKLOADS.items()},
)
DATASET_NAMES = sorted({workload.dataset for workload in WORKLOADS.values() if workload.dataset is not None})
DataSources = create_model(
    "DataSources", __base__=Strict,
    timeout_s=(Annotated[float, Field(gt=0)], ...),  # one deadline for all of a download stage's fetches
    **{name: (DATASETS[name].source_model, ...) for name in DATASET_NAMES},
)


class Params(Strict):
    """The whole of params.yaml."""

    strategy: Literal[STRATEGY_NAMES]  # type: ignore[valid-type]
    reference: Reference
    hardware: Hardware
    partition: PartitionOptions
    pipeline: PipelineParams
    benchmark: BenchmarkOptions
    scale: str
    scales: Scales  # type: ignore[valid-type]
    data: DataSources  # type: ignore[valid-type]
    inputs: dict[str, str]  # workload -> what its stages read besides the code (dvc.yaml's foreach over workloads)
    sweeps: dict[str, Sweep]

    def settings(self, workload: str) -> TrainSettings:
        """The hyper-parameters of `workload` at the chosen scale."""
        return getattr(self.scales, workload)[self.scale]

    def dataset_read(self, workload: str) -> str | None:
        """The prepared dataset a workload's runs read (`inputs`); None when it draws its own data."""
        return input_choices(workload)[self.inputs[workload]]

    def data_source(self, dataset: str) -> DataSource:
        """A dataset's params section: where it comes from (`download` or a local folder), and its options."""
        return getattr(self.data, dataset)


def load_params(path: Path = PARAMS_FILE) -> Params:
    """Read and validate params.yaml, every sweep's cells included; every problem becomes one ConfigError naming
    key, value and fix."""
    raw = read_raw_params(path)
    params = validate_params(raw, str(path))
    for name, sweep in params.sweeps.items():
        _check_sweep_cells(str(path), raw, name, sweep, params.scale)
    return params


def read_raw_params(path: Path = PARAMS_FILE) -> dict[str, Any]:
    """params.yaml as plain YAML values, not validated yet."""
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found; run from the project root, where params.yaml lives.") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level, found {type(raw).__name__}.")
    return raw


def validate_params(raw: dict[str, Any], where: str) -> Params:
    """Validate plain params values; `where` names their origin (the file, plus any overrides) in errors."""
    infinite = non_finite_keys(raw)
    if infinite:
        raise ConfigError(f"{where}: {', '.join(infinite)}: inf and nan are not valid values for any setting; "
                          "write a finite number.")
    try:
        params = Params.model_validate(raw, strict=True)  # strict: YAML's true is not 1, 1.5 is not a whole number
    except ValidationError as err:
        raise ConfigError(explain(where, err, Params)) from None
    _check_cross_fields(where, params)
    return params


def with_overrides(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A copy of plain params values with dotted keys replaced, e.g. {"pipeline.split_size": 12}."""
    changed = copy.deepcopy(raw)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        section = changed
        for key in parents:
            if not isinstance(section.get(key), dict):
                raise ConfigError(f"override {dotted}={value!r}: params.yaml has no section {key!r} there; "
                                  "check the key's spelling against params.yaml.")
            section = section[key]
        section[leaf] = value
    return changed


def sweep_params(raw: dict[str, Any], sweep: Sweep) -> dict[str, Any]:
    """Plain params values as a sweep's cells see them: its workload reading the sweep's own inputs."""
    return with_overrides(raw, {f"inputs.{sweep.workload}": sweep.inputs})


def _check_cross_fields(path: str, params: Params) -> None:
    for workload in WORKLOADS:
        by_scale = getattr(params.scales, workload)
        if params.scale not in by_scale:
            raise ConfigError(
                f"{path}: scale: {params.scale!r} is not defined for workload {workload!r}; "
                f"choose one of: {', '.join(sorted(by_scale))} (keys of scales.{workload})."
            )
        split_size, batch_size = params.pipeline.for_workload(workload).split_size, params.settings(workload).batch_size
        if split_size > batch_size:
            own = workload in params.pipeline.split_sizes
            key = f"pipeline.split_sizes.{workload}" if own else "pipeline.split_size"
            raise ConfigError(
                f"{path}: {key}: {split_size} is larger than scales.{workload}.{params.scale}.batch_size: "
                f"{batch_size}, "
                f"so a micro-batch could never be filled (checked whatever the strategy, so that a later "
                f"`-S strategy=pipeline` does not fail); set {key} to at most {batch_size}."
            )
    check_inputs(path, params.inputs)
    for name, sweep in params.sweeps.items():
        if sweep.values_at(params.scale) is None:
            raise ConfigError(
                f"{path}: sweeps.{name}.values has no list for scale {params.scale!r}; add one, give one list for "
                f"every scale, or choose a scale among {', '.join(sorted(sweep.values))}."
            )
        check_input_choice(path, f"sweeps.{name}.inputs", sweep.workload, sweep.inputs)
        if sweep.param == "pipeline.split_size" and sweep.workload in params.pipeline.split_sizes:
            raise ConfigError(
                f"{path}: sweeps.{name}.param: pipeline.split_size does not reach {sweep.workload}, whose "
                f"pipeline.split_sizes.{sweep.workload} entry takes precedence; sweep "
                f"pipeline.split_sizes.{sweep.workload} instead."
            )


def _check_sweep_cells(path: str, raw: dict[str, Any], name: str, sweep: Sweep, scale: str) -> None:
    """Each of a sweep's cells, its value and its curve's overrides applied to params.yaml, is valid params: a value
    that could never run (a split size above the batch, a string for a number) stops here, not minutes into it."""
    base = sweep_params(raw, sweep)
    for _, _, overrides in sweep.cells(scale):
        validate_params(with_overrides(base, overrides), f"{path} (sweeps.{name}, the cell {overrides})")
