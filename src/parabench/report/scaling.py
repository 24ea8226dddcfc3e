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
from itertools import accumulate, combinations
from typing import Any

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
    pipeline_step,
    relative_error,
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
from parabench.strategies.cost import ModelSizes, ReplicaCost, ReplicaStep, StagedCost
from parabench.strategies.partition import split_costs
from parabench.strategies.registry import BASELINE, HEADLINE, STRATEGIES
from parabench.workloads.contract import Scaling

GOAL, MEDIAN_GOAL = 0.15, 0.08  # each cell within 15% (or 3x its own noise, where larger); the median within 8%
NOISE_MULTIPLE = 3  # a cell's noise: its median's standard error, the 95% interval's half-width over Z_95
PREDICTED = {name: strategy.cost for name, strategy in STRATEGIES.items() if strategy.cost is not None}


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


def model_sizes(single: CellFigures) -> ModelSizes:
    """The model's sizes as single's cell recorded them."""
    return ModelSizes(tuple(single.gradient_bytes), single.buffer_bytes)


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
    figures: CellFigures, single: CellFigures, micro_batched: bool, links: Links | None
) -> StepPrediction | None:
    """A cut model's step: its schedule's bound over its stages' seconds (timed one by one on one device), plus single's
    input and optimizer. A distributed pipeline's schedule runs its micro-batches; model_parallel is a pipeline of one
    micro-batch, its stages one after another, so their seconds add up to the whole model's forward and backward on
    the whole batch, which single timed whole: the stages take single's forward and backward in the shares their own
    timing gives them (timed block by block, the blocks add up to 1-22% more than the whole on a CPU). Each boundary's
    activation and gradient cross the link as one message each (`links`: the probe's send/recv fit), where the
    stages are processes or devices of their own; on a CPU's virtual devices in one process they stay in its memory.
    None for the in-process pipeline (one process's stages cannot overlap) and for a cut without stage times.
    `micro_batched`: the strategy's StagedCost says which of the two it is."""
    details = figures.strategy_details
    distributed = figures.processes > 1
    if not details.get("stage_seconds") or not (distributed or not micro_batched):
        return None
    transfers: list[float] = []
    if links is not None and (distributed or not figures.devices_virtual):
        transfers = [2 * links.message_seconds(size) for size in details.get("boundary_bytes", [])]
    stage_seconds = list(details["stage_seconds"])
    if not micro_batched:
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
    ceiling, single = ran(cells, "ceiling"), ran(cells, BASELINE)
    if links is None or ceiling is None or single is None:
        return []
    checks = []
    for label, figures in cells.items():
        cost = PREDICTED.get(label)
        if cost is None or not isinstance(figures, CellFigures) or figures.devices < 2:
            continue
        if isinstance(cost, StagedCost):
            predicted = pipelined(figures, single, cost.micro_batched, links)
            if predicted is None:
                continue
        else:
            step = ReplicaStep(
                compute_s=ceiling.step_time_s.median,
                forward_backward_s=forward_backward_s(ceiling),
                sizes=model_sizes(single),
                links=links,
                devices=figures.devices,
                own_devices=not figures.devices_virtual,
                details=figures.strategy_details,
                batch_bytes=scattered_bytes(single, figures.global_batch),
                optimizer_s=ceiling.time_split_s.get("optimizer", 0.0),
            )
            predicted = cost.step(step)
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
    collectives stay within a node and its replicas' all-reduce crosses the network (its ReplicaCost's
    shards_within_node). Nodes that were
    one host (loopback) share its CPU: every process of the run side by side, and ddp hides only what its collectives
    wait, as on one CPU; where no ceiling of that many copies ran (one device a node), single's compute stands in,
    alone on the host, and the row says so.

    The distributed pipeline: its stages' seconds as its run timed them (one stage a process, the global rank its
    stage), each boundary's activation and gradient over the network where the boundary joins two nodes, within a
    node elsewhere, plus single's input and optimizer.

    None where the run spanned one node, the strategy has no cost model, the probe between the nodes did not run (or
    the one within a node, where a link within one is needed), or no cell of the layout ran."""
    cost = PREDICTED.get(train.strategy) if train is not None else None
    if train is None or cost is None or train.environment.get("nodes", 1) < 2 or train.processes < 2:
        return None
    details, single, network_links = train.strategy_details, ran(cells, BASELINE), measured_links(network)
    if network_links is None or single is None:
        return None
    nodes, hosts = train.environment["nodes"], train.environment.get("node_hosts", [])
    one_host = len(hosts) == nodes and len(set(hosts)) == 1
    per_node = train.processes // nodes
    within = measured_links(probe) if per_node > 1 else network_links  # one process a node: its copies alone
    where = f"{nodes} nodes on one host" if one_host else f"{nodes} nodes"
    name, note = train.strategy, ""
    if isinstance(cost, StagedCost):
        predicted = pipeline_across_nodes(details, single, within, network_links, per_node)
    else:
        shard_links = within if cost.shards_within_node(details) else network_links
        if shard_links is None:
            return None
        name = " ".join(part for part in (name, cost.described(details)) if part)
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
        step = ReplicaStep(
            compute_s=layout.step_time_s.median + (share - 1) * scaled,
            forward_backward_s=forward_backward * share,
            sizes=model_sizes(single),
            links=shard_links,
            devices=train.processes,
            own_devices=not one_host,
            details=details,
            across=network_links,
            optimizer_s=layout.time_split_s.get("optimizer", 0.0),
        )
        predicted = cost.step(step)
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
    """The distributed pipeline of a train run over several nodes (checked_across_nodes): None for a cut without stage
    times (a cut model in one process never spans nodes), or a boundary within a node with no link measured there."""
    if not details.get("stage_seconds"):
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
    single = next((figures for cell, figures in timed if cell.curve == BASELINE), None)
    if single is None:
        return []
    checks = []
    for cell, figures in timed:
        predicted = pipelined(figures, single, micro_batched(cell.curve), links)
        if predicted is not None:
            label = cell.curve if cell.value is None else f"{cell.curve} {cell.value}"
            checks.append(check(label, figures, predicted))
    return checks


def micro_batched(curve: str) -> bool:
    """Whether a sweep's curve feeds micro-batches: its curves are the swept pipeline's, but for a line named after a
    cut model that feeds none (model_parallel's)."""
    cost = PREDICTED.get(curve)
    return not isinstance(cost, StagedCost) or cost.micro_batched


def extended(
    single: CellFigures,
    measured: dict[str, dict[str, Any]],
    options: PredictOptions,
    scaling: Scaling,
    probe: Probe,
    network: Probe,
) -> list[PredictedScaling]:
    """Each predicted strategy's speedup (its rate over single's) and efficiency at every count of predict.devices,
    on devices of their own, with the share of the step its exposed communication (or bubble) takes and the link it
    crosses (each strategy with what its benchmark cell recorded of itself, `measured`, at that scale: at_scale). Under
    strong `scaling` the replicas share single's global batch; under weak each computes one as large as single's, so
    the global batch grows with them (a cut model has no replicas: its batch stays). A cut model is cut as `cut_at`
    says (staged_at), at most one stage per block."""
    virtual = single.devices_virtual or (isinstance(probe, Probed) and probe.device == "cpu")
    staged = next((details for name in staged_first() if (details := measured.get(name))), {})
    rows = []
    for devices in options.devices:
        links, link_text, validated = link_at(devices, options, probe, network)
        for name, cost in PREDICTED.items():
            if isinstance(cost, StagedCost):
                step = staged_at(single, staged, cost, devices, links)
                grown = 1
                link = (
                    f"{name} stages, activations over {link_text}"
                    if staged.get("block_seconds")
                    else f"{name} stages (equal, no transfers modelled: no cut ran here)"
                )
            else:
                grown = devices if scaling == "weak" else 1  # the global batch over single's
                step = replicas_at(single, measured.get(name, {}), cost, devices, grown, options, probe, network)
                link = link_text
            if step is None:
                continue
            speedup = grown * single.step_time_s.median / step.step_s
            rows.append(
                PredictedScaling(
                    strategy=name,
                    devices=devices,
                    speedup=speedup,
                    efficiency=speedup / devices,
                    exposed_share=step.exposed_communication_s / step.step_s,
                    link=link,
                    validated=validated and not virtual,
                )
            )
    return rows


def staged_first() -> list[str]:
    """The cut models' names, those feeding micro-batches first: where more than one ran, the cut a pipeline recorded
    (with its micro-batches) is the one extended."""
    staged = [(name, cost) for name, cost in PREDICTED.items() if isinstance(cost, StagedCost)]
    return [name for name, cost in sorted(staged, key=lambda pair: not pair[1].micro_batched)]


def staged_at(
    single: CellFigures, staged: dict[str, Any], cost: StagedCost, devices: int, links: Links
) -> StepPrediction | None:
    """A cut model at `devices` stages (None beyond its blocks), cut as cut_at says, each boundary sending a
    micro-batch's activation forward and its gradient back, plus single's input and optimizer."""
    if staged.get("cut") and devices > sum(staged["cut"]):
        return None
    forward_backward = forward_backward_s(single)
    each = int(staged.get("micro_batches", 4)) if cost.micro_batched else 1
    shares, sent = cut_at(devices, staged, single.global_batch / each)
    transfers = [2 * links.message_seconds(size) for size in sent]
    bound = pipeline_step([forward_backward * share / each for share in shares], each, transfers)
    return StepPrediction(bound.compute_s + single.step_time_s.median - forward_backward, bound.exposed_communication_s)


def replicas_at(
    single: CellFigures,
    details: dict[str, Any],
    cost: ReplicaCost,
    devices: int,
    grown: int,
    options: PredictOptions,
    probe: Probe,
    network: Probe,
) -> StepPrediction | None:
    """A data-parallel or sharded strategy at `devices` devices of their own, computing `grown` times single's global
    batch among them, with what its cell recorded (`details`) at that scale (its ReplicaCost's at_scale), over the
    link `devices` cross (link_at); where its shards stay within a node (shards_within_node) and it spans several,
    its shards' collectives cross the link within one and its replicas' the network. One process driving every
    device: within one node only (None beyond), its first device taking in the whole global batch and stepping alone."""
    if cost.one_process and devices > options.devices_per_node:
        return None
    single_step, forward_backward = single.step_time_s.median, forward_backward_s(single)
    compute = single_step * grown / devices
    if cost.one_process:
        input_s = single.time_split_s.get("input", 0.0)
        compute = single_step - forward_backward + (grown - 1) * input_s + forward_backward * grown / devices
    nodes = -(-devices // options.devices_per_node)
    at_scale = cost.at_scale(details, devices, nodes)
    links, _, _ = link_at(devices, options, probe, network)
    within, across = links, None
    if nodes > 1 and cost.shards_within_node(at_scale):
        within, _, _ = link_at(options.devices_per_node, options, probe, network)
        across = links
    step = ReplicaStep(
        compute_s=compute,
        forward_backward_s=forward_backward * grown / devices,
        sizes=model_sizes(single),
        links=within,
        devices=devices,
        own_devices=True,
        details=at_scale,
        batch_bytes=scattered_bytes(single, single.global_batch * grown),
        across=across,
        optimizer_s=single.time_split_s.get("optimizer", 0.0),
    )
    return cost.step(step)


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
    """The headline strategy (ddp) at the largest device count, under the workload's `scaling` (as `extended`): the
    share of its step left to exposed all-reduce over the link it crosses, and what each other link of that kind
    (within a node or between nodes) would leave."""
    devices = max(options.devices)
    grown = devices if scaling == "weak" else 1
    single_step, forward_backward = single.step_time_s.median * grown, forward_backward_s(single) * grown
    links, link_text, _ = link_at(devices, options, probe, network)
    across = devices > options.devices_per_node
    chosen = options.network if across else options.interconnect
    cost = PREDICTED[HEADLINE]
    assert isinstance(cost, ReplicaCost), f"the headline strategy {HEADLINE} is data-parallel"

    def exposed_share(over: Links) -> float:
        step = cost.step(
            ReplicaStep(single_step / devices, forward_backward / devices, model_sizes(single), over, devices, True, {})
        )
        return step.exposed_communication_s / step.step_s

    kind = ("ethernet", "infiniband") if across else ("pcie", "nvlink")
    return Bottleneck(
        strategy=HEADLINE,
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
    single = ran(cells, BASELINE)
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
    measured = {name: figures.strategy_details for name in PREDICTED if (figures := ran(cells, name)) is not None}
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
        predictions=extended(single, measured, options, scaling, probe, network),
        bottleneck=bottleneck(single, options, scaling, probe, network),
        probe=probe,
    )


def compact(prediction: PredictionResults, options: PredictOptions) -> dict[str, Any]:
    """Two values for `dvc exp show`: the prediction's median error at the measured cells, and what the headline
    strategy (ddp) would make of the largest device count (results/prediction/ hold the rest, whether each check met
    its goal among it)."""
    largest = max(options.devices)
    rows = prediction.predictions
    headline = next((row for row in rows if row.strategy == HEADLINE and row.devices == largest), None)
    error = prediction.median_abs_error
    return {
        "prediction_median_error": None if error is None else float(f"{error:.3g}"),
        f"{HEADLINE}_efficiency_at_{largest}": None if headline is None else float(f"{headline.efficiency:.3g}"),
    }
