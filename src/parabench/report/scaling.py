"""What more devices would buy here: each strategy's step predicted (prediction.py) from one-device measurements and
the probe's links, checked against every multi-device cell of the benchmark, then extended to predict.devices.

The check. At a measured cell of N processes, one replica's compute is the ceiling cell's median step (N copies of
`single` side by side, each on its share of the batch, no communication: on a CPU they share its cores, caches and
memory bandwidth as the replicas do; that cell is never scored). ddp and allreduce add the ring all-reduce of every
gradient (the bytes single's cell counted, tensor by tensor), bucket by bucket as each buckets them (buckets.py: DDP's
first bucket of 1 MiB, then 25 MiB each, closed once full; allreduce's at most 25 MiB), over the link the probe
fitted to its all-reduce, and the copies of every gradient into its bucket and back at the probe's copy bandwidth;
ddp also broadcasts the model's buffers from rank 0 before each forward, over the probe's send/recv fit. ddp hides
its buckets but the last behind the rest of the backward pass: wholly on devices of their own, and on one CPU only
while they wait (1 - the probe's cpu_share: the rest takes the cores the backward needs).
fsdp, over the mesh its cell recorded, adds within each replica two all-gathers of the parameters and a
reduce-scatter of the gradients over its shards, then an all-reduce of each block's gradient shard across its replicas
(sharding none: every rank a replica), each over the probe's fit to that collective, the copies in and out around
them, and each block's fixed cost as the probe timed it, sharded or replicated. dp (CUDA only: it never runs on a
CPU) adds a broadcast of the parameters from the first device and a reduce of the gradients onto it, and the scatter
of the inputs, the gather of the outputs and the scatter of their gradients (a unit's bytes as single's step measured
them), all exposed. A
distributed pipeline takes its schedule's bound over its stages' forward and backward seconds, timed one by one on
one device (its `stage_seconds`), and each boundary's activation and gradient over the probe's send/recv fit, plus
single's input and optimizer; model_parallel is that pipeline with one micro-batch, its stages one after another,
which together are single's forward and backward (taken from single, in the stages' timed shares; on a CPU, one
process on virtual devices: nothing is sent). Each is compared with the cell's own median step.
The benchmark times node 0 alone; over several nodes the train run is checked too (ddp, allreduce, fsdp and the
distributed pipeline), over the probe between the nodes (checked_across_nodes).

The extension. At N devices of their own, under the workload's scaling rule: strong (single's global batch shared),
one replica computes 1/N of single's step (dp: 1/N of its forward and backward, its input and optimizer whole on the
first device, and only within one node, its one process driving every device); weak (each replica a batch as large as
single's), one replica computes single's whole step, and dp's first device takes in N batches. fsdp keeps the
sharding its benchmark cell ran, on the mesh the strategy would build (hybrid over several nodes: its shards within a
node over predict.interconnect, its replicas' all-reduce over predict.network). A cut model (no replicas: its batch
stays) is cut into N stages as `partition.balance: time` would cut its timed blocks (cut_at). The link is the probe's
(or predict.interconnect) within a node and predict.network (the probe between the nodes, a preset, or numbers
params.yaml gives) beyond predict.devices_per_node devices. A prediction that leaves what was measured (another link
kind, or devices of their own where this machine's were virtual) says so: `validated` is false.
"""

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate, combinations
from typing import Any

from parabench.buckets import allreduce_buckets, ddp_buckets
from parabench.config import GivenLink, PredictOptions
from parabench.prediction import (
    GBYTE,
    MEASURED,
    PRESETS,
    UNMEASURED_INTERCONNECT,
    UNMEASURED_NETWORK,
    Link,
    Links,
    StepPrediction,
    data_parallel_step,
    fsdp_step,
    pipeline_step,
    relative_error,
    replicated_step,
)
from parabench.records import (
    Bottleneck,
    Cell,
    CellFigures,
    CellsSummary,
    CollectiveFit,
    FittedLink,
    OrderCheck,
    PredictedScaling,
    PredictionCheck,
    PredictionResults,
    Probe,
    Probed,
    RunRecord,
    SweepCell,
    ran,
)
from parabench.stats import NO_DIFFERENCE, Z_95, median_interval, rate_ratio, ratio_verdict
from parabench.strategies.fsdp import mesh_shape
from parabench.strategies.partition import split_costs
from parabench.workloads.contract import Scaling

BACKWARD_SHARE = 2 / 3  # of forward and backward: the backward pass does about twice the forward's work
GOAL, MEDIAN_GOAL = 0.15, 0.08  # each cell within 15% (or 3x its own noise, where larger); the median within 8%
NOISE_MULTIPLE = 3  # a cell's noise: its median's standard error, the 95% interval's half-width over Z_95
PREDICTED = ("dp", "ddp", "allreduce", "fsdp", "pipeline", "model_parallel")
ONE_PROCESS = ("dp",)  # one process drives every device: never beyond one node
STAGED = ("pipeline", "model_parallel")  # a cut model: predicted from its stages' seconds
ACROSS_NODES = ("ddp", "allreduce", "fsdp", "pipeline")  # a train run over several nodes checked


def measured_links(probe: Probe) -> Links | None:
    """The links the probe fitted to the all-reduce, all-gather, reduce-scatter and send/recv (a collective the backend
    could not run takes the all-reduce's); None where the probe ran on one device."""
    if not isinstance(probe, Probed):
        return None
    fitted = {name: fit for name, fit in probe.collectives.items() if isinstance(fit, CollectiveFit)}
    if "all_reduce" not in fitted:
        return None

    def link(collective: str) -> Link:
        measured = fitted.get(collective, fitted["all_reduce"])
        return Link(measured.latency_s, 1 / measured.bandwidth_bytes_per_s)

    return Links(
        link("all_reduce"),
        link("all_gather"),
        link("reduce_scatter"),
        copy_bytes_per_s=probe.copy_bytes_per_s or float("inf"),
        shard_unit_s=probe.shard_unit_s,
        send_recv=link("send_recv"),
        cpu_share=fitted["all_reduce"].cpu_share if probe.device == "cpu" else 1.0,
        replicate_unit_s=probe.replicate_unit_s,
    )


def probe_rows(probe: Probe) -> list[dict[str, str]]:
    """The probe as a table: per collective its fitted latency and bandwidth, the share of its time a rank keeps a
    CPU busy, and its bus bandwidth at the largest message, or why the backend could not run it (none where the probe
    ran on one device)."""
    rows = []
    for collective, measured in probe.collectives.items() if isinstance(probe, Probed) else ():
        if not isinstance(measured, CollectiveFit):
            rows.append(
                {
                    "collective": collective,
                    "latency": "-",
                    "bandwidth": "-",
                    "CPU busy": "-",
                    "busbw at largest": measured.reason,
                }
            )
            continue
        largest = measured.points[-1]
        rows.append(
            {
                "collective": collective,
                "latency": f"{1e6 * measured.latency_s:.0f} us",
                "bandwidth": f"{measured.bandwidth_bytes_per_s / 1e9:.3g} GB/s",
                "CPU busy": f"{measured.cpu_share:.0%}",
                "busbw at largest": f"{largest.busbw_bytes_per_s / 1e9:.3g} GB/s at {largest.bytes:,} B",
            }
        )
    return rows


def link_at(devices: int, options: PredictOptions, probe: Probe, network: Probe) -> tuple[Links, str, bool]:
    """The links the collectives of `devices` go over, what they are, and whether they are the ones measured here
    (`probe` over this node's devices, `network` between the nodes)."""
    if devices > options.devices_per_node:
        return chosen_links(options.network, network, UNMEASURED_NETWORK, "network ", "one node")
    return chosen_links(options.interconnect, probe, UNMEASURED_INTERCONNECT, "", "one device")


def chosen_links(
    choice: str | GivenLink, probe: Probe, unmeasured: str, kind: str, alone: str
) -> tuple[Links, str, bool]:
    """The links a predict.interconnect or predict.network `choice` names (`kind` prefixes the text: "network " or
    nothing): the numbers params.yaml gives, a preset, or `measured`: the probe's fit, and where it timed nothing
    (`alone`: one device or one node), the `unmeasured` preset, said so."""
    if isinstance(choice, GivenLink):
        link = Link(choice.latency_us * 1e-6, 1 / (choice.bandwidth_gb_per_s * GBYTE))
        described = f"{choice.bandwidth_gb_per_s:g} GB/s, {choice.latency_us:g} us a step ({choice.source})"
        return Links.alike(link), f"{kind}{described}", False
    note = ""
    if choice == MEASURED:
        links = measured_links(probe)
        if links is not None and isinstance(probe, Probed):
            between = f"{probe.ranks} nodes" if probe.across == "nodes" else f"{probe.ranks} {probe.device} ranks"
            return links, f"{kind}measured: {probe.backend} between {between}", True
        choice, note = unmeasured, f" (nothing measured here: {alone})"
    preset = PRESETS[choice]
    return Links.alike(preset.link), f"{kind}{choice}{note}: {preset.source}", False


@dataclass(frozen=True)
class ModelSizes:
    """What the model's size sets of a step's communication, as single measured it: each gradient's bytes in the
    order the model registers its parameters (bucketed as buckets.py says), and its buffers' bytes."""

    gradient_bytes: tuple[int, ...]
    buffer_bytes: int

    @classmethod
    def of(cls, single: CellFigures) -> "ModelSizes":
        """The sizes single's cell recorded."""
        return cls(tuple(single.gradient_bytes), single.buffer_bytes)

    @property
    def total_gradient_bytes(self) -> int:
        """Every gradient's bytes (the parameters' alike)."""
        return sum(self.gradient_bytes)


def fsdp_mesh(details: Mapping[str, Any], devices: int) -> tuple[int, int]:
    """fsdp's replicas and shards as its run recorded its mesh (one dimension: one replica sharded over every rank; two:
    FSDP2's replicate x shard), or full sharding over `devices` where none was recorded (at more devices)."""
    mesh = list(details.get("mesh", [devices]))
    return (1, mesh[0]) if len(mesh) == 1 else (mesh[0], mesh[1])


def strategy_step(
    strategy: str,
    compute_s: float,
    forward_backward_s: float,
    sizes: ModelSizes,
    links: Links,
    devices: int,
    own_devices: bool,
    details: Mapping[str, Any] | None = None,
    batch_bytes: float = 0.0,
    across: Links | None = None,
) -> StepPrediction:
    """The predicted step of a data-parallel or sharded strategy over `devices` replicas computing `compute_s` each:
    ddp over DDP's buckets with its buffers broadcast before each forward, allreduce over its own buckets; fsdp over
    the mesh and sharding its `details` recorded (fsdp_mesh; full by default) and its `sharded_blocks`, its shards'
    collectives over `links` and its replicas' all-reduce over `across` (the links between the nodes, where its
    replicas span them; else `links`); dp by its broadcast of the parameters and reduce of the gradients through the
    first device, and the scatter and gather of `batch_bytes` (scattered_bytes) there."""
    details = details or {}
    gradient_bytes = sizes.total_gradient_bytes
    if strategy == "dp":
        return replicated_step(compute_s, gradient_bytes, batch_bytes, links.all_reduce, devices)
    if strategy == "fsdp":
        replicas, shards = fsdp_mesh(details, devices)
        gathers = 1 if details.get("sharding") == "grad_op" else 2
        units = int(details.get("sharded_blocks", 0))
        return fsdp_step(compute_s, gradient_bytes, links, across or links, replicas, shards, gathers, units)
    hideable = 0.0 if strategy == "allreduce" else 1.0 if own_devices else 1 - links.cpu_share
    backward_s = BACKWARD_SHARE * forward_backward_s
    bucketed = allreduce_buckets if strategy == "allreduce" else ddp_buckets
    broadcast = sizes.buffer_bytes if strategy == "ddp" else 0
    return data_parallel_step(
        compute_s, backward_s, bucketed(sizes.gradient_bytes), links, devices, hideable, broadcast
    )


def scattered_bytes(single: CellFigures, units: int) -> float:
    """What dp moves between its first device and the others for a step of `units` units: the inputs, the outputs
    and the outputs' gradients, at the bytes a unit of single's took (0 where single measured none)."""
    inputs, outputs = single.input_bytes_per_unit, single.output_bytes_per_unit
    return 0.0 if inputs is None or outputs is None else units * (inputs + 2 * outputs)


def forward_backward_s(cell: CellFigures) -> float:
    """A cell's forward and backward in its time split (`compute` where nothing communicates), else its whole step."""
    parts = cell.time_split_s
    return float(parts.get("compute", parts.get("forward_backward", cell.step_time_s.median)))


def check(label: str, figures: CellFigures, predicted: StepPrediction) -> PredictionCheck:
    """A cell's measured median step against its prediction (measured_check)."""
    return measured_check(label, figures.devices, figures.step_time_s.median, figures.median_precision, predicted)


def measured_check(
    label: str, devices: int, measured: float, median_precision: float, predicted: StepPrediction
) -> PredictionCheck:
    """A measured median step against its prediction: the error, and whether it is within the goal (15%, or 3x the
    median's standard error, `median_precision` being its 95% interval's half-width over it)."""
    error = relative_error(predicted.step_s, measured)
    allowed = max(GOAL, NOISE_MULTIPLE * median_precision / Z_95)
    return PredictionCheck(
        cell=label,
        devices=devices,
        predicted_step_s=predicted.step_s,
        predicted_exposed_communication_s=predicted.exposed_communication_s,
        measured_step_s=measured,
        error=error,
        allowed_error=allowed,
        within=abs(error) <= allowed,
    )


def pipelined(
    figures: CellFigures, single: CellFigures, model_parallel: bool, links: Links | None
) -> StepPrediction | None:
    """A cut model's step: its schedule's bound over its stages' seconds (timed one by one on one device), plus single's
    input and optimizer. A distributed pipeline's schedule runs its micro-batches; model_parallel is a pipeline of one
    micro-batch, its stages one after another, so their seconds add up to the whole model's forward and backward on
    the whole batch, which single timed whole: the stages take single's forward and backward in the shares their own
    timing gives them (timed block by block, the blocks add up to 1-22% more than the whole on a CPU). Each boundary's
    activation and gradient cross the link as one message each (`links`: the probe's send/recv fit), where the
    stages are processes or devices of their own; on a CPU's virtual devices in one process they stay in its memory.
    None for the in-process pipeline (one process's stages cannot overlap) and for a cut without stage times."""
    details = figures.strategy_details
    distributed = figures.processes > 1 and details.get("engine") == "distributed"
    if not details.get("stage_seconds") or not (distributed or model_parallel):
        return None
    transfers: list[float] = []
    if links is not None and (distributed or not figures.devices_virtual):
        transfers = [2 * links.message_seconds(size) for size in details.get("boundary_bytes", [])]
    stage_seconds = list(details["stage_seconds"])
    if model_parallel:
        whole, timed = forward_backward_s(single), sum(stage_seconds)
        stage_seconds = [whole * seconds / timed for seconds in stage_seconds]
    return staged_step(stage_seconds, details.get("micro_batches", 1) if distributed else 1, transfers, single)


def staged_step(
    stage_seconds: list[float], micro_batches: int, transfers: list[float], single: CellFigures
) -> StepPrediction:
    """A cut model's step: its schedule's bound over `stage_seconds` and the `transfers` between them (pipeline_step),
    plus single's input and optimizer."""
    step = pipeline_step(stage_seconds, micro_batches, transfers)
    parts = single.time_split_s
    return StepPrediction(step.compute_s + parts["input"] + parts["optimizer"], step.exposed_communication_s)


def checked_cells(cells: dict[str, Cell], links: Links | None) -> list[PredictionCheck]:
    """Predicted against measured, for every multi-device cell of a predicted strategy (none without a measured
    link, a ceiling or single)."""
    ceiling, single = ran(cells, "ceiling"), ran(cells, "single")
    if links is None or ceiling is None or single is None:
        return []
    checks = []
    for label, figures in cells.items():
        if label not in PREDICTED or not isinstance(figures, CellFigures) or figures.devices < 2:
            continue
        if label in STAGED:
            predicted = pipelined(figures, single, label == "model_parallel", links)
            if predicted is None:
                continue
        else:
            replica, forward_backward = ceiling.step_time_s.median, forward_backward_s(ceiling)
            own_devices = not figures.devices_virtual
            devices = figures.devices
            predicted = strategy_step(
                label,
                replica,
                forward_backward,
                ModelSizes.of(single),
                links,
                devices,
                own_devices,
                figures.strategy_details,
                scattered_bytes(single, figures.global_batch),
            )
        checks.append(check(label, figures, predicted))
    return checks


def checked_across_nodes(
    train: RunRecord | None, cells: dict[str, Cell], probe: Probe, network: Probe
) -> PredictionCheck | None:
    """The train run, where it spanned several nodes, predicted against its own median step (warm-up left out, the
    slowest rank's); the links between the nodes are the probe's between them (`network`), those within a node the
    probe's over node 0's devices (`probe`).

    ddp, allreduce and fsdp: one replica computes what node 0's cell of as many processes side by side as shared a
    host in the run computes (single for one; the ceiling for as many as its copies), its input and forward and
    backward scaled to the replica's share of the run's global batch (the optimizer's step stays whole). The
    collectives cross the network, their rings spanning every process, but for fsdp's hybrid sharding: its shards'
    collectives stay within a node and its replicas' all-reduce crosses the network (strategy_step). Nodes that were
    one host (loopback) share its CPU: every process of the run side by side, and ddp hides only what its collectives
    wait, as on one CPU; where no ceiling of that many copies ran (one device a node), single's compute stands in,
    alone on the host, and the row says so.

    The distributed pipeline: its stages' seconds as its run timed them (one stage a process, the global rank its
    stage), each boundary's activation and gradient over the network where the boundary joins two nodes, within a
    node elsewhere, plus single's input and optimizer.

    None where the run spanned one node, the strategy is none of these, the probe between the nodes did not run (or
    the one within a node, where a link within one is needed), or no cell of the layout ran."""
    if train is None or train.environment.get("nodes", 1) < 2 or train.strategy not in ACROSS_NODES:
        return None
    details, single, network_links = train.strategy_details, ran(cells, "single"), measured_links(network)
    if network_links is None or single is None:
        return None
    nodes, hosts = train.environment["nodes"], train.environment.get("node_hosts", [])
    one_host = len(hosts) == nodes and len(set(hosts)) == 1
    per_node = train.processes // nodes
    within = measured_links(probe) if per_node > 1 else network_links  # one process a node: its copies alone
    where = f"{nodes} nodes on one host" if one_host else f"{nodes} nodes"
    name, note = train.strategy, ""
    if train.strategy == "pipeline":
        predicted = pipeline_across_nodes(details, single, within, network_links, per_node)
    else:
        hybrid = train.strategy == "fsdp" and details.get("sharding") == "hybrid"
        shard_links = within if hybrid else network_links  # hybrid's shards stay within a node
        if shard_links is None:
            return None
        if train.strategy == "fsdp":
            name = f"fsdp {details.get('sharding', 'full')}"
        ceiling = ran(cells, "ceiling")
        side_by_side = train.processes if one_host else per_node
        layout = single if side_by_side == 1 else ceiling if ceiling and ceiling.processes == side_by_side else None
        if layout is None and one_host:
            layout, note = single, f"; single's compute, alone there: no ceiling of {side_by_side} copies ran"
        if layout is None:
            return None
        share = (train.global_batch / train.replicas) / (layout.global_batch / layout.processes)
        forward_backward = forward_backward_s(layout)
        scaled = forward_backward + layout.time_split_s.get("input", 0.0)
        predicted = strategy_step(
            train.strategy,
            layout.step_time_s.median + (share - 1) * scaled,
            forward_backward * share,
            ModelSizes.of(single),
            shard_links,
            train.processes,
            not one_host,
            details,
            across=network_links,
        )
    if predicted is None:
        return None
    _, low, high = median_interval([train.step_durations])
    measured = train.step_time_s.median
    return measured_check(
        f"{name} across {where} (the train run{note})",
        train.devices,
        measured,
        (high - low) / 2 / measured,
        predicted,
    )


def pipeline_across_nodes(
    details: dict[str, Any], single: CellFigures, within: Links | None, network: Links, per_node: int
) -> StepPrediction | None:
    """The distributed pipeline of a train run over several nodes (checked_across_nodes): None for the in-process one
    (it never spans nodes), a cut without stage times, or a boundary within a node with no link measured there."""
    if details.get("engine") != "distributed" or not details.get("stage_seconds"):
        return None
    transfers = []
    for boundary, size in enumerate(details.get("boundary_bytes", [])):
        link = network if boundary // per_node != (boundary + 1) // per_node else within
        if link is None:
            return None
        transfers.append(2 * link.message_seconds(size))
    return staged_step(list(details["stage_seconds"]), details.get("micro_batches", 1), transfers, single)


def order_checks(checks: list[PredictionCheck], cells: dict[str, Cell], floor: float | None) -> list[OrderCheck]:
    """Each pair of checked cells whose measured rates differ beyond the noise (their ratio's interval excludes 1 and
    the ratio is farther from 1 than the A/A floor: the benchmark's own verdict), and whether their predicted steps
    order them alike (each step's rate counting its global batch, as the measured ratio does). Pairs within the noise
    have no measured order to keep."""
    predicted = {check.cell: check.predicted_step_s for check in checks}
    timed = {label: figures for label in predicted if (figures := ran(cells, label)) is not None}
    orders = []
    for first, second in combinations(timed, 2):
        measured = rate_ratio(timed[first], timed[second])
        verdict = ratio_verdict(measured, floor)
        if verdict == NO_DIFFERENCE:
            continue
        faster, slower = (first, second) if verdict == "faster" else (second, first)
        point, low, high = measured if faster == first else rate_ratio(timed[faster], timed[slower])
        batches = timed[faster].global_batch / timed[slower].global_batch
        predicted_ratio = batches * predicted[slower] / predicted[faster]
        orders.append(
            OrderCheck(
                faster=faster,
                slower=slower,
                measured_ratio=point,
                measured_ci95=[low, high],
                predicted_ratio=predicted_ratio,
                agrees=predicted_ratio > 1,
            )
        )
    return orders


def order_row(order: OrderCheck) -> dict[str, str]:
    """One order check as the page and make run's summary show it."""
    return {
        "measured faster": order.faster,
        "than": order.slower,
        "measured": f"{order.measured_ratio:.2f}x ({order.measured_ci95[0]:.2f}-{order.measured_ci95[1]:.2f})",
        "predicted": f"{order.predicted_ratio:.2f}x",
        "same order": "yes" if order.agrees else "NO",
    }


def check_row(check: PredictionCheck) -> dict[str, str]:
    """One check as the page and make run's summary show it: the cell, its predicted and measured step, the error and
    whether it is within the goal (with what was allowed where not)."""
    return {
        "cell": check.cell,
        "predicted step (s)": f"{check.predicted_step_s:.4g}",
        "measured step (s)": f"{check.measured_step_s:.4g}",
        "error": f"{check.error:+.0%}",
        "within goal": "yes" if check.within else f"NO (allowed {check.allowed_error:.0%})",
    }


def checked_sweep_cells(cells: list[SweepCell], links: Links | None) -> list[PredictionCheck]:
    """Predicted against measured, for every distributed pipeline cell of a sweep and its model_parallel line (against
    its `single` line), the activations between stages crossing `links` (the probe's, or None) as in the benchmark's
    checks."""
    timed = [(cell, cell.figures) for cell in cells if isinstance(cell.figures, CellFigures)]
    single = next((figures for cell, figures in timed if cell.curve == "single"), None)
    if single is None:
        return []
    checks = []
    for cell, figures in timed:
        predicted = pipelined(figures, single, cell.curve == "model_parallel", links)
        if predicted is not None:
            label = cell.curve if cell.value is None else f"{cell.curve} {cell.value}"
            checks.append(check(label, figures, predicted))
    return checks


def extended(
    single: CellFigures,
    staged: dict[str, Any],
    sharded: dict[str, Any],
    options: PredictOptions,
    scaling: Scaling,
    probe: Probe,
    network: Probe,
) -> list[PredictedScaling]:
    """Each predicted strategy's speedup (its rate over single's) and efficiency at every count of predict.devices,
    on devices of their own, with the share of the step its exposed communication (or bubble) takes and the link it
    crosses (fsdp in the sharding and over the blocks its benchmark cell recorded, `sharded`: at_devices; dp within
    one node only, its input and optimizer on the first device). Under strong `scaling` the replicas share single's
    global batch; under weak each computes one as large as single's, so the global batch grows with them (a cut model
    has no replicas: its batch stays). A cut model is cut as `cut_at` says, at most one stage per block, each boundary
    sending a micro-batch's activation forward and its gradient back."""
    single_step, forward_backward = single.step_time_s.median, forward_backward_s(single)
    input_s = single.time_split_s.get("input", 0.0)
    sizes = ModelSizes.of(single)
    virtual = single.devices_virtual or (isinstance(probe, Probed) and probe.device == "cpu")
    micro_batches = int(staged.get("micro_batches", 4))
    blocks, timed_blocks = sum(staged.get("cut", [])), bool(staged.get("block_seconds"))
    rows = []
    for devices in options.devices:
        links, link_text, measured = link_at(devices, options, probe, network)
        for strategy in PREDICTED:
            if strategy in ONE_PROCESS and devices > options.devices_per_node:
                continue
            if strategy in STAGED and blocks and devices > blocks:
                continue
            grown = devices if scaling == "weak" and strategy not in STAGED else 1  # the global batch over single's
            if strategy in STAGED:
                each = micro_batches if strategy == "pipeline" else 1
                shares, sent = cut_at(devices, staged, single.global_batch / each)
                transfers = [2 * links.message_seconds(size) for size in sent]
                bound = pipeline_step([forward_backward * share / each for share in shares], each, transfers)
                step = StepPrediction(bound.compute_s + single_step - forward_backward, bound.exposed_communication_s)
            else:
                if strategy in ONE_PROCESS:  # the first device takes in the whole global batch and steps alone
                    compute = (
                        single_step - forward_backward + (grown - 1) * input_s + forward_backward * grown / devices
                    )
                else:
                    compute = single_step * grown / devices
                within, details, across = links, None, None
                if strategy == "fsdp":
                    within, details, across = at_devices(sharded, devices, options, links, probe, network)
                step = strategy_step(
                    strategy,
                    compute,
                    forward_backward * grown / devices,
                    sizes,
                    within,
                    devices,
                    True,
                    details,
                    scattered_bytes(single, single.global_batch * grown),
                    across,
                )
            speedup = grown * single_step / step.step_s
            rows.append(
                PredictedScaling(
                    strategy=strategy,
                    devices=devices,
                    speedup=speedup,
                    efficiency=speedup / devices,
                    exposed_share=step.exposed_communication_s / step.step_s,
                    link=(
                        link_text
                        if strategy not in STAGED
                        else f"{strategy} stages, activations over {link_text}"
                        if timed_blocks
                        else f"{strategy} stages (equal, no transfers modelled: no cut ran here)"
                    ),
                    validated=measured and not virtual,
                )
            )
    return rows


def at_devices(
    sharded: dict[str, Any], devices: int, options: PredictOptions, links: Links, probe: Probe, network: Probe
) -> tuple[Links, dict[str, Any], Links | None]:
    """fsdp at `devices` (over `links`, the link they cross), in the sharding its benchmark cell recorded (`sharded`;
    full where none ran) on as many nodes as predict.devices_per_node makes: its mesh as the strategy builds it, over
    `links` but for hybrid sharding over several nodes, whose shards' collectives cross the link within a node
    (predict.interconnect) and whose replicas' all-reduce `links` (the network); the links its shards and its
    replicas cross."""
    sharding = sharded.get("sharding", "full")
    nodes = -(-devices // options.devices_per_node)
    details = {**sharded, "mesh": list(mesh_shape(sharding, devices, nodes))}
    if sharding != "hybrid" or nodes == 1:
        return links, details, None
    within, _, _ = link_at(options.devices_per_node, options, probe, network)
    return within, details, links


def cut_at(stages: int, staged: dict[str, Any], units: float) -> tuple[list[float], list[float]]:
    """A cut model at `stages` stages: each stage's share of the forward and backward, and the bytes a micro-batch of
    `units` sends across each boundary; cut as `partition.balance: time` would cut the benchmark's blocks (their
    seconds and the bytes each leaves per unit, timed by its cut: `staged`), or into equal shares sending nothing
    where no cut ran here."""
    seconds, leaves = staged.get("block_seconds"), staged.get("block_output_bytes_per_unit", [])
    if not seconds:
        return [1 / stages] * stages, []
    ends = list(accumulate(split_costs(seconds, stages)))
    shares = [sum(seconds[start:end]) / sum(seconds) for start, end in zip([0, *ends], ends)]
    return shares, [leaves[end - 1] * units for end in ends[:-1]]


def bottleneck(
    single: CellFigures, options: PredictOptions, scaling: Scaling, probe: Probe, network: Probe
) -> Bottleneck:
    """ddp at the largest device count, under the workload's `scaling` (as `extended`): the share of its step left to
    exposed all-reduce over the link it crosses, and what each other link of that kind (within a node or between
    nodes) would leave."""
    devices = max(options.devices)
    grown = devices if scaling == "weak" else 1
    single_step, forward_backward = single.step_time_s.median * grown, forward_backward_s(single) * grown
    links, link_text, _ = link_at(devices, options, probe, network)
    across = devices > options.devices_per_node
    chosen = options.network if across else options.interconnect
    sizes = ModelSizes.of(single)

    def exposed_share(over: Links) -> float:
        step = strategy_step("ddp", single_step / devices, forward_backward / devices, sizes, over, devices, True)
        return step.exposed_communication_s / step.step_s

    kind = ("ethernet", "infiniband") if across else ("pcie", "nvlink")
    return Bottleneck(
        strategy="ddp",
        devices=devices,
        link=link_text,
        exposed_share=exposed_share(links),
        other_links={
            name: exposed_share(Links.alike(preset.link))
            for name, preset in PRESETS.items()
            if name.startswith(kind) and name != chosen
        },
    )


def predict(
    benchmark: CellsSummary,
    options: PredictOptions,
    scaling: Scaling,
    probe: Probe,
    network: Probe,
    train: RunRecord | None = None,
) -> PredictionResults:
    """The checks at the measured cells (and at the `train` run, where it spanned several nodes: checked_across_nodes)
    and the extension to predict.devices under the workload's `scaling` rule (module docstring), from the
    benchmark's summarised cells and the probe's results."""
    cells = benchmark.cells
    single = ran(cells, "single")
    if single is None:
        return PredictionResults(
            links=None,
            checks=[],
            order_checks=[],
            median_abs_error=None,
            max_abs_error=None,
            within_goal=False,
            predictions=[],
            bottleneck=None,
            scaling=scaling,
            why_none="single did not run in the benchmark (benchmark.strategies)",
            probe=probe,
        )
    links = measured_links(probe)
    across_nodes = checked_across_nodes(train, cells, probe, network)
    checks = checked_cells(cells, links) + ([across_nodes] if across_nodes else [])
    orders = order_checks(checks, cells, benchmark.noise.floor)
    errors = [abs(check.error) for check in checks]
    staged = strategy_details(cells, "pipeline") or strategy_details(cells, "model_parallel")
    sharded = strategy_details(cells, "fsdp")
    return PredictionResults(
        links=None
        if links is None
        else {
            collective: FittedLink(latency_s=link.latency_s, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s)
            for collective, link in vars(links).items()
            if isinstance(link, Link)
        },
        checks=checks,
        median_abs_error=statistics.median(errors) if errors else None,
        max_abs_error=max(errors) if errors else None,
        order_checks=orders,
        within_goal=bool(checks)
        and all(check.within for check in checks)
        and statistics.median(errors) <= MEDIAN_GOAL
        and all(order.agrees for order in orders),
        scaling=scaling,
        predictions=extended(single, staged, sharded, options, scaling, probe, network),
        bottleneck=bottleneck(single, options, scaling, probe, network),
        probe=probe,
    )


def strategy_details(cells: dict[str, Cell], label: str) -> dict[str, Any]:
    """What the cell `label` reported of its strategy, where it ran."""
    figures = ran(cells, label)
    return figures.strategy_details if figures is not None else {}


def compact(prediction: PredictionResults, options: PredictOptions) -> dict[str, Any]:
    """Two values for `dvc exp show`: the prediction's median error at the measured cells, and what ddp would make of
    the largest device count (results/prediction/ hold the rest, whether each check met its goal among it)."""
    largest = max(options.devices)
    ddp = next((row for row in prediction.predictions if row.strategy == "ddp" and row.devices == largest), None)
    error = prediction.median_abs_error
    return {
        "prediction_median_error": None if error is None else float(f"{error:.3g}"),
        f"ddp_efficiency_at_{largest}": None if ddp is None else float(f"{ddp.efficiency:.3g}"),
    }
