"""The params.yaml schema: one place that validates every value, up front, and explains what is wrong."""

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, create_model, field_validator

from parabench.errors import ConfigError
from parabench.strategies import STRATEGIES
from parabench.strategies.options import PartitionOptions, PipelineOptions
from parabench.workloads import WORKLOADS, TrainSettings

PARAMS_FILE = Path("params.yaml")
STRATEGY_NAMES = tuple(STRATEGIES)


def _auto_or_positive_int(value: Any) -> int | str:
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
        return value
    raise ValueError("must be 'auto' or a whole number >= 1")


AutoOrPositiveInt = Annotated[int | str, PlainValidator(_auto_or_positive_int)]


class Strict(BaseModel):
    """A schema section that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Hardware(Strict):
    """Where and how wide to run: `auto` values are resolved on the machine (see engine.hardware)."""

    accelerator: Literal["auto", "cpu", "cuda"]
    devices: AutoOrPositiveInt
    nodes: Annotated[int, Field(ge=1)]
    threads: AutoOrPositiveInt
    backend: Literal["auto", "gloo", "nccl"]
    max_restarts: Annotated[int, Field(ge=0)]


class Reference(Strict):
    """The run every speedup is measured against."""

    strategy: Literal[STRATEGY_NAMES]  # type: ignore[valid-type]


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


class DataSource(Strict):
    """Where a dataset comes from: `download` (official URLs, mirror first) or a local folder."""

    source: str

    @field_validator("source")
    @classmethod
    def _download_or_existing_folder(cls, value: str) -> str:
        if value != "download" and not Path(value).is_dir():
            raise ValueError(f"'{value}' is neither 'download' nor an existing folder")
        return value


Scales = create_model(
    "Scales",
    __base__=Strict,
    **{name: (dict[str, workload.settings_model], ...) for name, workload in WORKLOADS.items()},
)
DATASET_NAMES = sorted({workload.dataset for workload in WORKLOADS.values()})
DataSources = create_model("DataSources", __base__=Strict, **{name: (DataSource, ...) for name in DATASET_NAMES})


class Params(Strict):
    """The whole of params.yaml."""

    strategy: Literal[STRATEGY_NAMES]  # type: ignore[valid-type]
    reference: Reference
    hardware: Hardware
    partition: PartitionOptions
    pipeline: PipelineOptions
    benchmark: BenchmarkOptions
    scale: str
    scales: Scales  # type: ignore[valid-type]
    data: DataSources  # type: ignore[valid-type]

    def settings(self, workload: str) -> TrainSettings:
        """The hyper-parameters of `workload` at the chosen scale."""
        return getattr(self.scales, workload)[self.scale]

    def source(self, dataset: str) -> str:
        """Where a dataset comes from: `download` or a local folder."""
        return getattr(self.data, dataset).source


def load_params(path: Path = PARAMS_FILE) -> Params:
    """Read and validate params.yaml; every problem becomes one ConfigError naming key, value and fix."""
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found; run from the project root, where params.yaml lives.") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level, found {type(raw).__name__}.")
    try:
        params = Params.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(_explain(path, err)) from None
    _check_cross_fields(path, params)
    return params


def _explain(path: Path, err: ValidationError) -> str:
    lines = [f"{path} is invalid ({err.error_count()} problem{'s' if err.error_count() > 1 else ''}):"]
    for problem in err.errors():
        key = ".".join(str(part) for part in problem["loc"])
        lines.append(f"  - {key}: {_describe(problem)}")
    lines.append(f"Fix {path} (or the -S override you passed to `dvc exp run`) and run again.")
    return "\n".join(lines)


def _describe(problem: dict[str, Any]) -> str:
    kind, given = problem["type"], problem.get("input")
    if kind == "missing":
        return "missing; this key is required (see the README's params.yaml section)"
    if kind == "extra_forbidden":
        return f"unknown key (value {given!r}); remove it or check its spelling"
    if kind in ("literal_error", "enum"):
        expected = problem.get("ctx", {}).get("expected", "")
        return f"{given!r} is not valid; choose one of: {expected}"
    return f"{given!r}: {problem['msg'].removeprefix('Value error, ')}"


def _check_cross_fields(path: Path, params: Params) -> None:
    for workload in WORKLOADS:
        by_scale = getattr(params.scales, workload)
        if params.scale not in by_scale:
            raise ConfigError(
                f"{path}: scale: {params.scale!r} is not defined for workload {workload!r}; "
                f"choose one of: {', '.join(sorted(by_scale))} (keys of scales.{workload})."
            )
