"""The prediction extended to predict.devices: each strategy's speedup and efficiency at device counts not measured
here.

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

from itertools import accumulate

from parabench.config import PredictOptions
from parabench.prediction.checks import PREDICTED, forward_backward_s, model_sizes, scattered_bytes
from parabench.prediction.collectives import PRESETS, Links
from parabench.prediction.links import link_at
from parabench.records import (
    Bottleneck,
    CellFigures,
    PredictedScaling,
    Probe,
    Probed,
)
from parabench.strategies.cost import ReplicaCost, ReplicaStep, StagedCost, StepPrediction, pipeline_step
from parabench.strategies.details import Details
from parabench.strategies.partition import CutDetails, split_costs
from parabench.strategies.registry import HEADLINE, STRATEGIES
from parabench.workloads.contract import Scaling


def extended(
    single: CellFigures,
    measured: dict[str, Details],
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
    staged = next((details for name in staged_first() if isinstance(details := measured.get(name), CutDetails)), None)
    rows = []
    for devices in options.devices:
        links, link_text, validated = link_at(devices, options, probe, network)
        for name, cost in PREDICTED.items():
            if isinstance(cost, StagedCost):
                step = staged_at(single, staged or CutDetails(), cost, devices, links)
                grown = 1
                link = (
                    f"{name} stages, activations over {link_text}"
                    if staged is not None and staged.block_seconds
                    else f"{name} stages (equal, no transfers modelled: no cut ran here)"
                )
            else:
                grown = devices if scaling == "weak" else 1  # the global batch over single's
                recorded = measured.get(name) or STRATEGIES[name].details_of({})
                step = replicas_at(single, recorded, cost, devices, grown, links, options, probe, network)
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
    single: CellFigures, staged: CutDetails, cost: StagedCost, devices: int, links: Links
) -> StepPrediction | None:
    """A cut model at `devices` stages (None beyond its blocks), cut as cut_at says, each boundary sending a
    micro-batch's activation forward and its gradient back, plus single's input and optimizer."""
    if staged.cut and devices > sum(staged.cut):
        return None
    forward_backward = forward_backward_s(single)
    each = (staged.micro_batches or 4) if cost.micro_batched else 1
    shares, sent = cut_at(devices, staged, single.global_batch / each)
    transfers = [2 * links.message_seconds(size) for size in sent]
    bound = pipeline_step([forward_backward * share / each for share in shares], each, transfers)
    return StepPrediction(bound.compute_s + single.step_time_s.median - forward_backward, bound.exposed_communication_s)


def replicas_at(
    single: CellFigures,
    details: Details,
    cost: ReplicaCost,
    devices: int,
    grown: int,
    links: Links,
    options: PredictOptions,
    probe: Probe,
    network: Probe,
) -> StepPrediction | None:
    """A data-parallel or sharded strategy at `devices` devices of their own, computing `grown` times single's global
    batch among them, with what its cell recorded (`details`) at that scale (its ReplicaCost's at_scale), over the
    `links` `devices` cross (link_at's); where its shards stay within a node (shards_within_node) and it spans several,
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


def cut_at(stages: int, staged: CutDetails, units: float) -> tuple[list[float], list[float]]:
    """A cut model at `stages` stages: each stage's share of the forward and backward, and the bytes a micro-batch of
    `units` sends across each boundary; cut as `partition.balance: time` would cut the benchmark's blocks (their
    seconds and the bytes each leaves per unit, timed by its cut: `staged`), or into equal shares sending nothing
    where no cut ran here."""
    seconds, leaves = staged.block_seconds, staged.block_output_bytes_per_unit
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
            ReplicaStep(
                single_step / devices, forward_backward / devices, model_sizes(single), over, devices, True, Details()
            )
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
