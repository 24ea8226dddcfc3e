"""What the workers measure and the stages summarise, as typed records: a training run, a timed benchmark or sweep
cell, the evaluation, a workload's benchmark summary and a sweep's.

The training worker (engine/worker.py) writes a RunRecord to results/{train,reference}/<workload>.json, a cell
job a CellRun for each cell (kept in results/benchmark_cells/ and results/sweep_cells/), the evaluate
stage an Evaluation to results/eval/<workload>.json, the speedup stage a BenchmarkResults to
results/benchmark/<workload>.json and the sweep_summary stage a SweepResults to results/sweep/<name>.json; the report
reads them back through these models, never by string keys. Each field says what it is once, here; docs/metrics.md's
last section is printed from these (tests/test_records.py holds the two equal).

    python -m parabench.records    # every record's fields and meanings: docs/metrics.md's last section
"""

from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


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


class StepSigns(Record):
    """What the operating system saw of one rank over one timed step (runtime/step_signs.py)."""

    wall_s: float = Field(description="the step's seconds on this rank's clock")
    cpu_s: float = Field(description="CPU seconds the rank's threads used meanwhile (user and system)")
    machine_busy_s: float | None = Field(
        description="CPU seconds the whole machine was not idle meanwhile, every CPU together (cpuidle), what other "
        "processes and the hypervisor took included; None where the kernel has no cpuidle"
    )
    waited_s: float | None = Field(
        description="seconds the rank's threads were ready to run but waited for a CPU (schedstat's run_delay, summed "
        "over the threads); None where /proc does not tell"
    )
    steal_s: float | None = Field(
        description="seconds the hypervisor gave this machine's CPUs to other guests meanwhile (every CPU, "
        "/proc/stat's 10 ms ticks); None where /proc does not tell"
    )
    involuntary_switches: int = Field(description="times the kernel took a CPU from the rank's threads")
    minor_faults: int = Field(description="pages the rank touched for the first time, or again after they were freed")
    major_faults: int = Field(description="pages read back from disk")
    collections: int = Field(description="the garbage collector's runs")


class CellTurn(Record):
    """One turn of a cell: the steps it took while every other cell waited, as its ranks measured them."""

    step_durations: list[float] = Field(description="each step of the turn, in seconds, the slowest rank's")
    phase_durations: list[list[dict[str, float]]] = Field(
        description="per rank, per step, the seconds of each phase (input, forward_backward, optimizer)"
    )
    signs: list[list[StepSigns]] = Field(description="per rank, per step, what the operating system saw")


class CellSetup(Record):
    """A benchmark or sweep cell once its job's workers have built it, warmed it up and measured it off the clock."""

    unit: str = Field(description="what a batch is made of: sample or episode")
    setup_s: float = Field(description="seconds from the setup command to ready for turns: build, warm-up, counts")
    warmup_step_durations: list[float] = Field(
        description="rank 0's warm-up steps, left out of the timing (a compiled model's first holds its compilation)"
    )
    peak_memory_mb: dict[str, float] = Field(
        description="per rank and device, the peak memory of the cell's warm-up and counted steps as if alone in its "
        "processes: what its job held before any cell, plus what the cell added at its peak"
    )
    memory_kind: str = Field(description="what peak_memory_mb counts: CUDA allocations or the process's RSS")
    saved_for_backward_mb: dict[str, float] | None = Field(
        description="per rank, what autograd kept for backward in one more step, off the clock (activations; each "
        "storage once, the parameters left out), in MiB"
    )
    input_bytes_per_unit: float | None = Field(
        description="a unit's inputs as the model takes them (after the transform), in bytes, in that same step; None "
        "where rank 0 has no outputs (a pipeline's first stage)"
    )
    output_bytes_per_unit: float | None = Field(description="a unit's outputs as the loss reads them, in bytes, alike")
    gradient_allreduce_s: float | None = Field(
        description="one all-reduce of all the gradients at once (data-parallel cells): communication unhidden"
    )
    parameters: int = Field(description="the plain model's trained parameters (its gradients are as many)")
    gradient_bytes: list[int] = Field(
        description="each trained parameter's gradient, in bytes, in the order the model registers them (this "
        "process's stage, for a cut model): what data parallelism buckets (buckets.py)"
    )
    buffer_bytes: int = Field(
        description="the model's buffers (BatchNorm's running statistics), in bytes: what DDP broadcasts from rank 0 "
        "before each forward"
    )
    transform_units_per_s: float | None = Field(
        description="the workload's transform alone (decode, normalise, augment), units a second in one process"
    )
    strategy_details: dict[str, Any] = Field(description="what the strategy reports of itself (cut, buckets, ...)")


class CellRun(CellSetup):
    """A benchmark or sweep cell as its job's workers measured it: set up once, then timed turn by turn, in turn with
    the other cells, its model and optimiser alive between its turns."""

    turns: list[CellTurn] = Field(
        description="every turn, in order; turn t of every cell ran within the same pass (a settled cell stops early)"
    )


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


class Speedups(Record):
    """The run's speedup over its reference, two ways (report/speedup.py's docstring), and which one is the headline."""

    speedup: float = Field(description="the headline: the benchmark's where it timed the run's strategy")
    speedup_ci95: list[float] = Field(description="its 95% interval")
    speedup_from: Literal["benchmark", "training_runs"] = Field(description="which of the two the headline is")
    speedup_benchmark: float | None = Field(description="the benchmark's interleaved turns, paired; None: not timed")
    speedup_benchmark_ci95: list[float] | None = Field(description="its 95% interval")
    speedup_training_runs: float = Field(description="the reference's training time over the run's")
    speedup_training_runs_ci95: list[float] = Field(description="its 95% interval")
    speedups_agree: bool | None = Field(
        description="whether the two agree within their intervals combined (stats.estimates_agree); None: one figure"
    )


class Comparison(Record):
    """The training run against its reference: what the speedup stage's metrics leave out."""

    note: str = Field(description="how to read the speedups")
    strategy: str = Field(description="the run's strategy")
    reference: str = Field(description="the reference's strategy")
    accumulate: int = Field(description="the run's micro-steps per optimiser step")
    knobs: str = Field(description="the run's training knobs away from their defaults, in words")
    speedups: Speedups = Field(description="both speedups with their intervals")
    quality: str | None = Field(description="the paired difference in words; None: nothing to score")
    data_origin: str = Field(description="where the data came from, in one sentence")
    scaling_efficiency: float = Field(description="the headline speedup over the run's devices")
    speedup_end_to_end: float | None = Field(description="the reference job's wall time over the run's; None: resumed")
    rate: dict[str, str | float] = Field(description="unit, and both runs' units a second")
    train_time_s: dict[str, float] = Field(description="both runs' median step x steps")
    wall_time_s: dict[str, float | None] = Field(description="both jobs from launch, start-up and evaluation included")
    devices: int = Field(description="the run's devices")
    evaluation: Evaluation = Field(description="both models' test scores and their paired difference")
    benchmark_reference: str = Field(description="the benchmark cell speedups are taken against")
    load: dict[str, dict[str, float | None]] = Field(description="other programs' CPU share and load during each run")
    environment: dict[str, dict[str, Any]] = Field(description="the machine, software and layout of each run")


Verdict = Literal["faster", "slower", "no detectable difference"]  # stats.ratio_verdict


class CellFigures(Record):
    """A benchmark cell that ran, summarised over its turns (report/benchmark.py): its rate, its speedup over single
    and its efficiency against the ceiling, each with its interval and verdict, and where its median step went."""

    status: Literal["ran"] = Field(description="the cell ran (a skipped one holds only `status` and `reason`)")
    unit: str = Field(description="what a batch is made of: sample or episode")
    rate: float = Field(description="units a second at the median of every kept step of every turn")
    rate_ci95: list[float] = Field(
        description="the rate's 95% bootstrap interval (turns in blocks, then each one's steps)"
    )
    median_precision: float = Field(description="half the median step's 95% interval, over the median")
    step_durations_by_turn: list[list[float]] = Field(
        description="every kept step, turn by turn, in seconds (a disturbed step left out)"
    )
    step_time_s: StepTimes = Field(description="the kept steps of every turn together")
    turns: int = Field(description="how many turns timed the cell")
    disturbed_steps: dict[str, int] = Field(
        description="steps left out as disturbed, by why: other programs (or the hypervisor) took over a tenth of a "
        "CPU meanwhile, disk reads, page faults (runtime/step_signs.py)"
    )
    global_batch: int = Field(description="units per step over every replica")
    processes: int = Field(description="processes the cell ran in")
    devices: int = Field(description="devices the cell used (virtual ones on a CPU)")
    devices_virtual: bool = Field(description="several devices that are one CPU's cores")
    data_parallel: bool = Field(description="replicas of the whole model, each on its share of the batch")
    contended: bool = Field(description="more than a tenth of its steps disturbed")
    peak_memory_mb: dict[str, float] = Field(
        description="per rank and device, its peak memory as if alone in its processes (CellSetup)"
    )
    memory_kind: str = Field(description="what peak_memory_mb counts: CUDA allocations or the process's RSS")
    saved_for_backward_mb: dict[str, float] | None = Field(
        description="per rank, what autograd kept for backward (each storage once, parameters left out)"
    )
    input_bytes_per_unit: float | None = Field(
        description="a unit's inputs as the model takes them, in bytes (dp scatters them); None: not measured"
    )
    output_bytes_per_unit: float | None = Field(
        description="a unit's outputs as the loss reads them, in bytes (dp gathers them, and scatters their gradients)"
    )
    parameters: int = Field(description="the plain model's trained parameters")
    gradient_bytes: list[int] = Field(
        description="each trained parameter's gradient, in bytes, in the model's order: what data parallelism buckets"
    )
    buffer_bytes: int = Field(description="the model's buffers, in bytes: what DDP broadcasts before each forward")
    strategy_details: dict[str, Any] = Field(description="what the strategy reports of itself (cut, buckets, ...)")
    environment: dict[str, Any] = Field(description="the machine, software and process layout it ran on")
    time_split_s: dict[str, float] = Field(description="the median step split into its parts (docs/metrics.md)")
    time_split_vs_step: float = Field(description="the parts' sum over the median step, minus 1")
    time_split_adds_up: bool = Field(description="the parts add up to the median step within 10%")
    gradient_allreduce_s: float | None = Field(description="one all-reduce of all the gradients at once")
    communication_share: float | None = Field(description="the median step's share spent communicating")
    communication_hidden_share: float | None = Field(description="the share of that all-reduce hidden by backward")
    speedup: float | None = Field(description="the cell's rate over single's, turns paired (stats.ratio_interval)")
    speedup_ci95: list[float] | None = Field(description="its 95% bootstrap interval, paired turns drawn in blocks")
    speedup_verdict: Verdict | None = Field(description="against 1 and the noise floor")
    scaling_efficiency: float | None = Field(description="speedup over devices")
    efficiency_vs_ceiling: float | None = Field(description="the rate over the ceiling's (data-parallel cells)")
    efficiency_vs_ceiling_ci95: list[float] | None = Field(description="its 95% bootstrap interval")
    efficiency_vs_ceiling_verdict: Verdict | None = Field(description="against 1 and the noise floor")


class SkippedCell(Record):
    """A benchmark cell that could not run here, planned as skipped before any heavy work."""

    status: Literal["skipped"] = Field(description="skipped: the cell could not run here")
    reason: str = Field(description="why, and what to do")


class NoiseFloor(Record):
    """The A/A control: single timed again as a cell of its own; how far apart the two landed."""

    floor: float | None = Field(description="the larger of aa_floor and smallest_difference; None: neither")
    control: str = Field(description="the control cell's label")
    smallest_difference: float = Field(description="params.yaml's smallest_difference: the least floor")
    aa_ratio: float | None = Field(default=None, description="single's rate over the control's")
    aa_ci95: list[float] | None = Field(default=None, description="its 95% bootstrap interval")
    aa_floor: float | None = Field(default=None, description="how far from 1 the A/A ratio is (0.05: 5%)")
    why_none: str | None = Field(default=None, description="why no floor was measured")


class Ranking(Record):
    """Which strategy is fastest, named only beyond the noise floor; else the strategies tied with the best."""

    fastest: str | None = Field(description="the fastest strategy, beyond the noise; None: a tie or nothing ran")
    tied: list[str] = Field(description="the strategies within the noise of the best, best first")
    best_measured: str | None = Field(
        default=None,
        description="the best speedup over single (paired by turn; the rate where single did not run), tie or not",
    )
    runner_up: str | None = Field(default=None, description="the next best")
    margin: float | None = Field(description="the best's rate over the runner-up's, paired by turn")
    margin_ci95: list[float] | None = Field(description="its 95% bootstrap interval")


class StageShares(Record):
    """Where a timing stage's seconds went."""

    wall_s: float = Field(description="the whole stage")
    start_up_s: float = Field(description="starting every cell's workers, all at once, until the last was ready")
    setup_s: float = Field(description="setting the cells up, one at a time: building, warm-up, counts off the clock")
    timed_steps_s: float = Field(description="the timed steps themselves")
    start_up_share: float = Field(description="start_up_s over wall_s")
    setup_share: float = Field(description="setup_s over wall_s")
    timed_steps_share: float = Field(description="timed_steps_s over wall_s")
    jobs_started: int = Field(description="worker jobs started: one per cell that ran")
    turns: int = Field(description="the stage's turns (single took each; a settled cell fewer)")


Cell = Annotated[CellFigures | SkippedCell, Field(discriminator="status")]


def ran(cells: dict[str, Cell], label: str) -> CellFigures | None:
    """The figures of the cell `label`, if it ran."""
    cell = cells.get(label)
    return cell if isinstance(cell, CellFigures) else None


class CellsSummary(Record):
    """Timed cells summarised (report/benchmark.py): each cell's figures, the noise floor, the flags and the ranking."""

    scale: str | None = Field(
        description="the scale the cells were timed at (benchmark.scale_on); None: no cell could be planned"
    )
    cells: dict[str, Cell] = Field(description="label -> the cell's figures, or why it was skipped")
    noise: NoiseFloor = Field(description="the A/A control and the noise floor it sets")
    flags: dict[str, str] = Field(description="label -> why the cell's figure is not an answer")
    ranking: Ranking = Field(description="the fastest strategy, or the tie")


class BenchmarkResults(CellsSummary):
    """A workload's benchmark, summarised by the speedup stage from what the benchmark stage measured."""

    stage: StageShares = Field(description="where the benchmark stage's time went")
    choices: dict[str, Any] = Field(description="the workload's settings shown beside its metrics")


class PredictionCheck(Record):
    """A measured multi-device cell's median step (or the train run's, where it spanned several nodes) against its
    prediction."""

    cell: str = Field(description="the cell (a sweep's: its curve and value), or the train run across the nodes")
    devices: int = Field(description="its devices")
    predicted_step_s: float = Field(description="the predicted step, in seconds")
    predicted_exposed_communication_s: float = Field(description="its communication (or bubble) left exposed")
    measured_step_s: float = Field(description="the cell's measured median step")
    error: float = Field(description="predicted over measured, minus 1")
    allowed_error: float = Field(
        description="the goal: 15%, or 3x the cell's own noise (its median's standard error) where larger"
    )
    within: bool = Field(description="the error within the goal")


class OrderCheck(Record):
    """Two checked cells whose measured rates differ beyond the noise: does the prediction order them alike?"""

    faster: str = Field(description="the cell measured faster")
    slower: str = Field(description="the cell measured slower")
    measured_ratio: float = Field(description="the faster's rate over the slower's, paired by turn (> 1)")
    measured_ci95: list[float] = Field(description="its 95% interval, above 1 and beyond the noise floor")
    predicted_ratio: float = Field(description="the same ratio from their predicted steps: above 1 where it agrees")
    agrees: bool = Field(description="the prediction puts the faster cell first")


class SweepCell(Record):
    """A sweep's cell: the curve and value it times, and its figures as a benchmark cell's."""

    curve: str = Field(description="the curve it belongs to (an engine or a knob's setting), or single/model_parallel")
    value: Any = Field(description="the swept param's value; None for the reference lines (single, model_parallel)")
    figures: Cell = Field(description="its figures, or why it was skipped")


class CurveFigures(Record):
    """A sweep curve's best value, against single, model_parallel and the curve's own largest value (> 1: faster)."""

    status: Literal["ran"] = Field(description="at least one value ran")
    best_value: Any = Field(description="the value with the shortest median step")
    best_median_s: float = Field(description="that median step, in seconds")
    speedup: float | None = Field(description="single's median step over the best's; None: single did not run")
    speedup_vs_model_parallel: float | None = Field(description="model_parallel's over the best's; None: not run")
    largest_value: Any = Field(description="the curve's largest value (for a split size: the whole batch)")
    speedup_vs_largest_value: float = Field(description="the largest value's median step over the best's")
    note: str | None = Field(default=None, description="why the curve's stages cannot overlap here, where they cannot")


class SkippedCurve(Record):
    """A sweep curve none of whose values could run on this hardware."""

    status: Literal["skipped"] = Field(description="skipped: its cells say why")


class SweepResults(Record):
    """A sweep, summarised by its sweep_summary stage from what its sweep stage measured."""

    sweep: dict[str, Any] = Field(description="params.yaml's sweeps.<name>: workload, strategy, param, values")
    scale: str = Field(description="the settings' scale (quick or paper)")
    curves: dict[str, Annotated[CurveFigures | SkippedCurve, Field(discriminator="status")]] = Field(
        description="curve -> its best value and speedups, or skipped"
    )
    reference_lines: dict[str, StepTimes | SkippedCell] = Field(
        description="single's and model_parallel's steps, the lines each curve is read against, or why one was skipped"
    )
    skipped: list[str] = Field(description="each cell that could not run here, and why, a line each")
    stage: StageShares = Field(description="where the sweep stage's time went")
    cells: list[SweepCell] = Field(description="every cell, in the sweep's order")
    prediction_checks: list[PredictionCheck] = Field(
        description="predicted against measured step at each distributed pipeline cell (prediction/checks.py)"
    )


class ProbePoint(Record):
    """One message size of a collective, timed."""

    bytes: int = Field(description="the message size")
    seconds: float = Field(description="the median of the probe's repeats (send_recv: half the round trip)")
    algbw_bytes_per_s: float = Field(description="nccl-tests' algorithm bandwidth: bytes over seconds")
    busbw_bytes_per_s: float = Field(description="nccl-tests' bus bandwidth: algbw x the ring's share of the buffer")
    cpu_share: float = Field(
        description="the share of a call's time the ranks' own threads kept a CPU busy (mean over the ranks, at most "
        "1); the rest is waiting"
    )


class CollectiveFit(Record):
    """A collective timed over message sizes, and the latency and bandwidth fitted to its times (alpha-beta)."""

    status: Literal["ran"] = Field(description="the backend ran it")
    latency_s: float = Field(description="alpha: seconds per message step")
    bandwidth_bytes_per_s: float = Field(description="1 / beta: bytes a second once a message is under way")
    cpu_share: float = Field(
        description="the points' median cpu_share from 1 MiB up (where bytes take most of a call's time): on a CPU, "
        "what of the collective no other work of the rank can overlap"
    )
    points: list[ProbePoint] = Field(description="each message size timed, smallest first")


class SkippedCollective(Record):
    """A collective the backend could not run."""

    status: Literal["skipped"] = Field(description="skipped: the backend refused it")
    reason: str = Field(description="the backend's refusal")


Across = Literal["devices", "nodes"]


class Probed(Record):
    """The collectives timed over this node's devices, one rank each, or between the nodes, one rank on each."""

    across: Across = Field(description="devices (one rank per device of this node) or nodes (one rank on each node)")
    ranks: int = Field(description="how many ranks took part")
    backend: str = Field(description="the process group's backend (gloo, nccl)")
    device: str = Field(description="the device type the buffers were on")
    threads_per_rank: int = Field(description="torch threads of each rank")
    repeats: int = Field(description="timed repeats of each size (their median kept)")
    collectives: dict[str, Annotated[CollectiveFit | SkippedCollective, Field(discriminator="status")]] = Field(
        description="all_reduce, all_gather, reduce_scatter and send_recv: each fitted, or why not"
    )
    copy_bytes_per_s: float = Field(description="a copy within one device's memory while every rank copies")
    shard_unit_s: float = Field(description="what fully sharding one more block adds to a step, its bytes aside")
    replicate_unit_s: float = Field(
        description="what one more block replicated by FSDP (every rank a replica, its gradients all-reduced) adds "
        "to a step, its bytes aside"
    )
    environment: dict[str, Any] = Field(description="the machine it ran on")


class ProbeSkipped(Record):
    """No probe: one device (or one node) has nothing to communicate with."""

    ranks: int = Field(description="the devices there were")
    skipped: str = Field(description="why nothing was timed")
    environment: dict[str, Any] = Field(description="the machine it ran on")


Probe = Probed | ProbeSkipped


def probe_record(content: Any) -> Probe:
    """results/probe.json's content as the record it is: the collectives timed, or why none were."""
    return TypeAdapter(Probe).validate_python(content)


class PredictedScaling(Record):
    """A strategy predicted at a device count."""

    strategy: str = Field(description="the strategy")
    devices: int = Field(description="devices of their own, under the workload's scaling rule")
    speedup: float = Field(description="the predicted rate (units a second) over single's")
    efficiency: float = Field(description="speedup over devices")
    exposed_share: float = Field(description="the predicted step's share left to exposed communication (or bubble)")
    link: str = Field(description="the link its collectives cross, and where its figures come from")
    validated: bool = Field(description="the link is the one measured here, on devices of their own")


class Bottleneck(Record):
    """What limits the headline strategy (ddp) at the largest device count."""

    strategy: str = Field(description="the headline strategy (Strategy.headline)")
    devices: int = Field(description="the largest of predict.devices")
    link: str = Field(description="the link its all-reduce crosses there")
    exposed_share: float = Field(description="its step's share left to exposed all-reduce over that link")
    other_links: dict[str, float] = Field(description="what each other link of that kind would leave")


class FittedLink(Record):
    """A link as the prediction used it."""

    latency_s: float = Field(description="alpha: seconds per message step")
    bandwidth_bytes_per_s: float = Field(description="1 / beta, in bytes a second")


class PredictionResults(Record):
    """What more devices would buy, predicted from one-device measurements and the probe, checked at every measured
    multi-device cell (prediction/checks.py)."""

    links: dict[str, FittedLink] | None = Field(description="the probe's links by collective; None: none measured")
    checks: list[PredictionCheck] = Field(
        description="each multi-device cell of the benchmark checked, and the train run where it spanned several nodes"
    )
    median_abs_error: float | None = Field(description="the checks' median absolute error; None: no check")
    max_abs_error: float | None = Field(description="their largest absolute error")
    order_checks: list[OrderCheck] = Field(
        description="each pair of checked cells whose measured rates differ beyond the noise floor, in order or not"
    )
    within_goal: bool = Field(
        description="every check within its goal, the median within 8%, and every order check agreeing"
    )
    scaling: str = Field(
        description="the workload's scaling rule the predictions follow: strong (single's global batch shared by the "
        "devices) or weak (each device a batch as large as single's: the global batch grows with them)"
    )
    predictions: list[PredictedScaling] = Field(description="each strategy at each count of predict.devices")
    bottleneck: Bottleneck | None = Field(description="what limits ddp at the largest count; None: nothing predicted")
    why_none: str | None = Field(default=None, description="why nothing was predicted")
    probe: Probed | ProbeSkipped = Field(description="the probe the prediction started from")


RECORDS: dict[str, type[Record]] = {
    "results/{train,reference}/<workload>.json": RunRecord,
    "results/{benchmark,sweep}_cells/<name>.json, each cell's run": CellRun,
    "results/eval/<workload>.json": Evaluation,
    "results/speedup/<workload>.json": Comparison,
    "results/benchmark/<workload>.json": BenchmarkResults,
    "results/sweep/<name>.json": SweepResults,
    "results/probe.json": Probed,
    "results/prediction/<workload>.json": PredictionResults,
}


def field_lines(model: type[Record], prefix: str = "") -> list[str]:
    """`field`: meaning, one line per field of `model` (nested records' fields under their field's name)."""
    lines = []
    for name, field in model.model_fields.items():
        lines.append(f"- `{prefix}{name}`: {field.description}")
        for nested, key in nested_records(field.annotation):
            lines += field_lines(nested, f"{prefix}{name}.{key}")
    return lines


def nested_records(annotation: Any, key: str = "") -> list[tuple[type[Record], str]]:
    """Each record a field's type holds (itself, optional, in a union, or as a mapping's values), with the part of the
    name a mapping adds (`<key>.`)."""
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return [(annotation, key)]
    if get_origin(annotation) is dict:
        return nested_records(get_args(annotation)[1], f"{key}<key>.")
    found: list[tuple[type[Record], str]] = []
    for inner in get_args(annotation):
        for record, inner_key in nested_records(inner, key):
            if record not in [seen for seen, _ in found]:
                found.append((record, inner_key))
    return found


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
