"""What the workers measure, as typed records: a training run, a timed benchmark or sweep cell, and the evaluation.

The training worker (engine/worker.py) writes a RunRecord to results/{train,reference}/<workload>.json, a cell
worker a CellRun for each round of a cell (kept in results/benchmark_cells/ and results/sweep_cells/), the evaluate
stage an Evaluation to results/eval/<workload>.json; the report reads them back through these models, never by
string keys. Each field says what it is once, here; docs/metrics.md's last section is printed from these
(tests/test_records.py holds the two equal).

    python -m parabench.records    # every record's fields and meanings: docs/metrics.md's last section
"""

from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """A results file's schema: every field declared, none other accepted."""

    model_config = ConfigDict(extra="forbid")


class StepTimes(Record):
    """Median, quartiles and extremes of a run's step times, in seconds (warm-up excluded)."""

    steps: int = Field(description="how many steps were timed")
    median: float = Field(description="the median step, in seconds")
    p25: float = Field(description="the first quartile of the steps, in seconds")
    p75: float = Field(description="the third quartile of the steps, in seconds")
    min: float = Field(description="the shortest step, in seconds")
    max: float = Field(description="the longest step, in seconds")
    total: float = Field(description="all timed steps together, in seconds")


class RunIdentity(Record):
    """A planned run in plain values: what trains, how, on how many processes and devices, with what batch."""

    workload: str = Field(description="the workload trained")
    strategy: str = Field(description="the strategy it was trained with")
    processes: int = Field(description="how many processes ran it, over every node")
    devices: int = Field(description="how many devices it used (CPU devices are virtual: shares of the cores)")
    replicas: int = Field(description="how many copies of the model train on shards of each batch")
    global_batch: int = Field(description="units per optimiser step, over every replica")
    lr: float = Field(description="the learning rate, scaled for the global batch")
    accumulate: int = Field(description="micro-steps per optimiser step (gradient accumulation; 1: none)")
    precision: str = Field(description="what the forward computes in: 32, bf16-mixed or 16-mixed (autocast)")
    activation_checkpointing: str = Field(description="none, or blocks: each block's forward run again in backward")
    compile: bool = Field(description="whether each of the model's blocks ran torch.compile'd")

    def knobs(self) -> str:
        """The training knobs set away from their defaults, in words ("" when none)."""
        words = [f"accumulating {self.accumulate} micro-steps per optimiser step"] if self.accumulate > 1 else []
        words += [f"precision {self.precision}"] if self.precision != "32" else []
        words += ["activation checkpointing of every block"] if self.activation_checkpointing != "none" else []
        words += ["compiled"] if self.compile else []
        return ", ".join(words)


class RunRecord(RunIdentity):
    """Everything measured about one training run (train: params.yaml's strategy; reference: the reference's)."""

    scale: str = Field(description="the settings' scale (quick or paper)")
    unit: str = Field(description="what a batch is made of: sample or episode")
    data_origin: str = Field(description="one sentence: the full dataset, a SAMPLE of it, or a local folder")
    data_provenance: dict[str, Any] | None = Field(
        description="where the prepared data came from (data/provenance.py's record); None: drawn from the seed"
    )
    data_digest: str = Field(description="a digest of the bytes trained on; a checkpoint resumes only the same")
    labels: dict[str, Any] = Field(description="the workload's choices shown beside its metrics (e.g. pretrained)")
    epochs: int = Field(description="epochs planned")
    train_time_s: float = Field(description="median step x planned steps: the training's pure compute time")
    wall_time_s: float | None = Field(
        description="the job from its launch: start-up, every step, evaluation and checkpoints (only the epochs "
        "trained now, after a resume); None when no stage launched it"
    )
    units_per_s: float = Field(description="the global batch over the median step: samples (or episodes) a second")
    step_time_s: StepTimes = Field(description="the steps' median, quartiles and extremes")
    step_durations: list[float] = Field(description="every timed step, in seconds, the slowest rank's")
    final_epoch: dict[str, float | None] = Field(description="the last epoch's scores (train loss, validation, ...)")
    peak_memory_mb: dict[str, float] = Field(description="peak memory of the training steps, per rank and device")
    memory_kind: str = Field(description="what peak_memory_mb counts: CUDA allocations or the process's RSS")
    other_cpu_share: float | None = Field(
        description="the largest share of the machine's CPU that other programs took during an epoch"
    )
    contended: bool = Field(description="other_cpu_share above 10%: the timing is not to be trusted alone")
    load_average_1m: float | None = Field(description="the machine's 1-minute load average as the run ended")
    resumed_after_epoch: int | None = Field(description="the checkpoint's epoch it resumed after; None: from scratch")
    restarts: int = Field(description="torchrun's restarts of the workers (hardware.max_restarts)")
    strategy_details: dict[str, Any] = Field(description="what the strategy reports of itself (cut, buckets, ...)")
    environment: dict[str, Any] = Field(description="the machine, software and process layout it ran on")


class CellRun(Record):
    """One round of a benchmark or sweep cell, as rank 0 measured it: a fresh model timed after its warm-up."""

    unit: str = Field(description="what a batch is made of: sample or episode")
    step_durations: list[float] = Field(description="every timed step of the round, in seconds, the slowest rank's")
    phase_durations: list[list[dict[str, float]]] = Field(
        description="per rank, per timed step, the seconds of each phase (input, forward_backward, optimizer)"
    )
    gradient_allreduce_s: float | None = Field(
        description="one all-reduce of all the gradients at once (data-parallel cells): communication unhidden"
    )
    peak_memory_mb: dict[str, float] = Field(description="peak memory of the timed steps, per rank and device")
    memory_kind: str = Field(description="what peak_memory_mb counts: CUDA allocations or the process's RSS")
    warmup_step_durations: list[float] = Field(
        description="rank 0's warm-up steps, left out of the timing (a compiled model's first holds its compilation)"
    )
    saved_for_backward_mb: dict[str, float] | None = Field(
        description="per rank, what autograd kept for backward in one more step (activations), in MiB; a cell's "
        "first round only (None in the others)"
    )
    other_cpu_share: float | None = Field(description="the share of the machine's CPU other programs took meanwhile")
    parameters: int = Field(description="the plain model's trained parameters (its gradients are as many)")
    transform_units_per_s: float | None = Field(
        description="the workload's transform alone (decode, normalise, augment), units a second in one process"
    )
    strategy_details: dict[str, Any] = Field(description="what the strategy reports of itself (cut, buckets, ...)")


class PairedDifference(Record):
    """The run's mean per-item score minus the reference's, on the same test items."""

    delta: float = Field(description="the mean difference, run minus reference")
    ci95_low: float = Field(description="the low end of its 95% interval (normal, from the per-item differences)")
    ci95_high: float = Field(description="the high end of that interval")
    items: int = Field(description="how many test items were paired")
    mcnemar_p: float | None = Field(description="the exact McNemar p-value, for 0/1 outcomes; else None")


class Evaluation(Record):
    """Both trained models scored on the test split, and their paired difference."""

    train: dict[str, float] = Field(description="the run's test scores (e.g. test_acc and test_acc_ci95)")
    reference: dict[str, float] = Field(description="the reference's test scores")
    paired: PairedDifference | None = Field(
        default=None, description="run minus reference on the same items; None where the data has nothing to score"
    )


RECORDS: dict[str, type[Record]] = {
    "results/{train,reference}/<workload>.json": RunRecord,
    "results/{benchmark,sweep}_cells/<name>.json, each cell's runs": CellRun,
    "results/eval/<workload>.json": Evaluation,
}


def field_lines(model: type[Record], prefix: str = "") -> list[str]:
    """`field`: meaning, one line per field of `model` (nested records' fields under their field's name)."""
    lines = []
    for name, field in model.model_fields.items():
        lines.append(f"- `{prefix}{name}`: {field.description}")
        for nested in (field.annotation, *get_args(field.annotation)):
            if isinstance(nested, type) and issubclass(nested, Record):
                lines += field_lines(nested, f"{prefix}{name}.")
    return lines


def reference() -> str:
    """Every record's fields with their meanings, as docs/metrics.md lists them (Markdown)."""
    sections = [
        f"### `{where}`: {model.__name__}\n\n{model.__doc__}\n\n" + "\n".join(field_lines(model))
        for where, model in RECORDS.items()
    ]
    return "\n\n".join(sections) + "\n"


def main() -> None:
    """Print the records' reference."""
    print(reference(), end="")


if __name__ == "__main__":
    main()
