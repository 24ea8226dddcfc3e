"""The prediction checked against what was measured: each strategy's step (its own cost model: strategies/cost.py)
from one-device measurements and the probe's links, against every multi-device cell of a benchmark or sweep, and
the train run across nodes.

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
"""

from collections.abc import Callable
from itertools import combinations

from parabench.prediction.collectives import Links
from parabench.prediction.links import measured_links
from parabench.records import (
    Cell,
    CellFigures,
    OrderCheck,
    PredictionCheck,
    Probe,
    RunRecord,
    SweepCell,
    ran,
)
from parabench.stats import NO_DIFFERENCE, Z_95, median_interval, rate_ratio, ratio_verdict
from parabench.strategies.cost import ModelSizes, ReplicaCost, ReplicaStep, StagedCost, StepPrediction, pipeline_step
from parabench.strategies.details import Details
from parabench.strategies.partition import CutDetails
from parabench.strategies.registry import BASELINE, STRATEGIES

GOAL, MEDIAN_GOAL = 0.15, 0.08  # each cell within 15% (or 3x its own noise, where larger); the median within 8%


NOISE_MULTIPLE = 3  # a cell's noise: its median's standard error, the 95% interval's half-width over Z_95


PREDICTED = {name: strategy.cost for name, strategy in STRATEGIES.items() if strategy.cost is not None}


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
    error = predicted.step_s / measured - 1
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
    figures: CellFigures, details: Details, single: CellFigures, micro_batched: bool, links: Links | None
) -> StepPrediction | None:
    """A cut model's step: its schedule's bound over its stages' seconds (timed one by one on one device), plus single's
    input and optimizer. A distributed pipeline's schedule runs its micro-batches; model_parallel is a pipeline of one
    micro-batch, its stages one after another, so their seconds add up to the whole model's forward and backward on
    the whole batch, which single timed whole: the stages take single's forward and backward in the shares their own
    timing gives them (timed block by block, the blocks add up to 1-22% more than the whole on a CPU). Each boundary's
    activation and gradient cross the link as one message each (`links`: the probe's send/recv fit), where the
    stages are processes or devices of their own; on a CPU's virtual devices in one process they stay in its memory.
    None for the in-process pipeline (one process's stages cannot overlap) and for a cut without stage times.
    `micro_batched`: the strategy's StagedCost says which of the two it is; `details`, what the cell recorded of it."""
    distributed = figures.processes > 1
    if not isinstance(details, CutDetails) or not details.stage_seconds or not (distributed or not micro_batched):
        return None
    transfers: list[float] = []
    if links is not None and (distributed or not figures.devices_virtual):
        transfers = [2 * links.message_seconds(size) for size in details.boundary_bytes]
    stage_seconds = list(details.stage_seconds)
    if not micro_batched:
        whole, timed = forward_backward_s(single), sum(stage_seconds)
        stage_seconds = [whole * seconds / timed for seconds in stage_seconds]
    return staged_step(stage_seconds, (details.micro_batches or 1) if distributed else 1, transfers, single)


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
        details = STRATEGIES[label].details_of(figures.strategy_details)
        if isinstance(cost, StagedCost):
            predicted = pipelined(figures, details, single, cost.micro_batched, links)
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
                details=details,
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
    probe's over node 0's devices (`probe`): replicas as replicas_across_nodes says, a distributed pipeline as
    pipeline_across_nodes does.

    None where the run spanned one node, the strategy has no cost model, the probe between the nodes did not run (or
    the one within a node, where a link within one is needed), or no cell of the layout ran."""
    cost = PREDICTED.get(train.strategy) if train is not None else None
    if train is None or cost is None or train.environment.get("nodes", 1) < 2 or train.processes < 2:
        return None
    details = STRATEGIES[train.strategy].details_of(train.strategy_details)
    single, network_links = ran(cells, BASELINE), measured_links(network)
    if network_links is None or single is None:
        return None
    nodes, hosts = train.environment["nodes"], train.environment.get("node_hosts", [])
    one_host = len(hosts) == nodes and len(set(hosts)) == 1
    per_node = train.processes // nodes
    within = measured_links(probe) if per_node > 1 else network_links  # one process a node: its copies alone
    name, predicted, note = train.strategy, None, ""
    if isinstance(cost, StagedCost):
        predicted = pipeline_across_nodes(details, single, within, network_links, per_node)
    else:
        name = " ".join(part for part in (name, cost.described(details)) if part)
        shard_links = within if cost.shards_within_node(details) else network_links
        found = (
            None
            if shard_links is None
            else replicas_across_nodes(train, cells, cost, details, shard_links, network_links, one_host)
        )
        if found:
            predicted, note = found
    if predicted is None:
        return None
    _, low, high = median_interval([train.step_durations])
    measured = train.step_time_s.median
    where = f"{nodes} nodes on one host" if one_host else f"{nodes} nodes"
    label = f"{name} across {where} (the train run{note})"
    return measured_check(label, train.devices, measured, (high - low) / 2 / measured, predicted)


def replicas_across_nodes(
    train: RunRecord,
    cells: dict[str, Cell],
    cost: ReplicaCost,
    details: Details,
    links: Links,
    network: Links,
    one_host: bool,
) -> tuple[StepPrediction, str] | None:
    """A train run of replicas over several nodes (checked_across_nodes), and what its row should add, or None where no
    cell of its layout ran. One replica computes what node 0's cell of as many processes side by side as shared a host
    in the run computes (single for one; the ceiling for as many as its copies), its input and forward and backward
    scaled to the replica's share of the run's global batch (the optimizer's step stays whole). The collectives cross
    `links` (the network, their rings spanning every process; for a strategy whose shards stay within a node, those
    within one, its replicas' all-reduce crossing the `network`). Nodes that were `one_host` (loopback) share its CPU:
    every process of the run side by side, and ddp hides only what its collectives wait, as on one CPU; where no
    ceiling of that many copies ran (one device a node), single's compute stands in, alone on the host, said so."""
    single, ceiling = ran(cells, BASELINE), ran(cells, "ceiling")
    side_by_side = train.processes if one_host else train.processes // train.environment["nodes"]
    layout = single if side_by_side == 1 else ceiling if ceiling and ceiling.processes == side_by_side else None
    note = ""
    if layout is None and one_host:
        layout, note = single, f"; single's compute, alone there: no ceiling of {side_by_side} copies ran"
    if layout is None or single is None:
        return None
    share = (train.global_batch / train.replicas) / (layout.global_batch / layout.processes)
    forward_backward = forward_backward_s(layout)
    scaled = forward_backward + layout.time_split_s.get("input", 0.0)
    step = ReplicaStep(
        compute_s=layout.step_time_s.median + (share - 1) * scaled,
        forward_backward_s=forward_backward * share,
        sizes=model_sizes(single),
        links=links,
        devices=train.processes,
        own_devices=not one_host,
        details=details,
        across=network,
        optimizer_s=layout.time_split_s.get("optimizer", 0.0),
    )
    return cost.step(step), note


def pipeline_across_nodes(
    details: Details, single: CellFigures, within: Links | None, network: Links, per_node: int
) -> StepPrediction | None:
    """The distributed pipeline of a train run over several nodes (checked_across_nodes): None for a cut without stage
    times (a cut model in one process never spans nodes), or a boundary within a node with no link measured there."""
    if not isinstance(details, CutDetails) or not details.stage_seconds:
        return None
    transfers = []
    for boundary, size in enumerate(details.boundary_bytes):
        link = network if boundary // per_node != (boundary + 1) // per_node else within
        if link is None:
            return None
        transfers.append(2 * link.message_seconds(size))
    return staged_step(list(details.stage_seconds), details.micro_batches or 1, transfers, single)


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


def checked_sweep_cells(
    cells: list[SweepCell], links: Links | None, strategy_of: Callable[[str], str]
) -> list[PredictionCheck]:
    """Predicted against measured, for every cut model's cell of a sweep (a distributed pipeline's, and the
    model_parallel line's, against its `single` line), the activations between stages crossing `links` (the probe's,
    or None) as in the benchmark's checks; `strategy_of(curve)`: the strategy a curve's cells ran."""
    timed = [(cell, cell.figures) for cell in cells if isinstance(cell.figures, CellFigures)]
    single = next((figures for cell, figures in timed if cell.curve == BASELINE), None)
    if single is None:
        return []
    checks = []
    for cell, figures in timed:
        strategy = STRATEGIES[strategy_of(cell.curve)]
        if not isinstance(strategy.cost, StagedCost):
            continue
        details = strategy.details_of(figures.strategy_details)
        predicted = pipelined(figures, details, single, strategy.cost.micro_batched, links)
        if predicted is not None:
            label = cell.curve if cell.value is None else f"{cell.curve} {cell.value}"
            checks.append(check(label, figures, predicted))
    return checks
