"""The params.yaml sections that belong to strategies: how a model is cut, how a pipeline is fed."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field


class PartitionOptions(BaseModel):
    """model_parallel and pipeline: into how many stages the model's ordered blocks are cut (one device each), and
    where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    balance: Literal["time", "parameters", "seed"]  # seed: where the workload's seed document cuts it
    stages: Literal["auto"] | Annotated[int, Field(ge=2)] = "auto"  # auto: one per device, at most one per block


class PipelineOptions(BaseModel):
    """pipeline: the engine, the micro-batch size and (distributed engine) the schedule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["inprocess", "distributed"]
    split_size: Annotated[int, Field(ge=1)]
    schedule: Literal["gpipe", "1f1b"]
