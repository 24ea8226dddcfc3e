"""The params.yaml sections that belong to strategies: how a model is cut, how a pipeline is fed."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

# params.yaml's strategy names: the registry's keys in its order (strategies/registry.py; tests/test_config.py)
StrategyName = Literal["single", "dp", "ddp", "allreduce", "model_parallel", "pipeline", "fsdp", "zero"]
PipelineEngine = Literal["inprocess", "distributed"]  # one process drives every stage | one process per stage
PipelineSchedule = Literal["gpipe", "1f1b"]  # the distributed engine's schedule
Precision = Literal["32", "bf16-mixed", "16-mixed"]  # Lightning's names: fp32, or autocast to bf16 or fp16


class FsdpOptions(BaseModel):
    """fsdp: how its parameters are sharded. full (ZeRO-3: resharded after forward, gathered again for backward),
    grad_op (ZeRO-2: kept whole from forward to backward), none (every rank a whole replica, gradients all-reduced:
    DDP-like), hybrid (sharded within a node, replicated across nodes: FSDP2's HSDP over a 2-D mesh)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sharding: Literal["full", "grad_op", "none", "hybrid"] = "full"


class PartitionOptions(BaseModel):
    """model_parallel and pipeline: into how many stages the model's ordered blocks are cut (one device each), and
    where."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    balance: Literal["time", "parameters", "documented"]  # documented: where the workload's source document cuts it
    stages: Literal["auto"] | Annotated[int, Field(ge=2)] = "auto"  # auto: one per device, at most one per block


class PipelineOptions(BaseModel):
    """pipeline, as one workload's run reads it: the engine, its micro-batch size (params.yaml's
    pipeline.split_size entry for the workload, whose key messages name) and (distributed engine) the schedule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: PipelineEngine
    split_size: Annotated[int, Field(ge=1)]
    schedule: PipelineSchedule
    split_size_key: str = "pipeline.split_size"  # the params.yaml key split_size came from
