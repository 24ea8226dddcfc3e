"""What more devices would buy, as arithmetic over measurements: collectives from a link's latency and bandwidth
(the alpha-beta model of Thakur, Rabenseifner and Gropp, 2005), a pipeline's schedule bound, and each strategy's step
at N devices from one device's compute.

A collective over n ranks of a `size`-byte buffer takes `steps` x alpha + `share` x size x beta with a ring:
all-reduce 2(n-1) steps moving 2(n-1)/n of the buffer per rank, all-gather and reduce-scatter (n-1) steps and (n-1)/n,
send/recv one step and all of it. `share` is also nccl-tests' bus-bandwidth factor: busbw = algbw x share, algbw =
size / time, so busbw is what each link carried and compares across n.
"""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "send_recv"]
COLLECTIVES: tuple[Collective, ...] = ("all_reduce", "all_gather", "reduce_scatter", "send_recv")


@dataclass(frozen=True)
class Link:
    """A link's latency (alpha, seconds per message step) and inverse bandwidth (beta, seconds per byte)."""

    latency_s: float
    seconds_per_byte: float

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Bytes a second the link carries once a message is under way (1 / beta)."""
        return 1 / self.seconds_per_byte if self.seconds_per_byte > 0 else float("inf")


@dataclass(frozen=True)
class Links:
    """The link each collective a strategy uses crosses: the probe's fit per collective, or one link for all."""

    all_reduce: Link
    all_gather: Link
    reduce_scatter: Link
    copy_bytes_per_s: float = float("inf")  # a copy within a device's memory (bucketing); unknown: free
    shard_unit_s: float = 0.0  # what fully sharding one more block adds to a step, its bytes aside; unknown: free
    send_recv: Link | None = None  # one message between two ranks (a cut model's activations); unknown: all_reduce's
    cpu_share: float = 1.0  # of an all-reduce's time, what its rank keeps a CPU busy (the rest waits); unknown: all
    replicate_unit_s: float = 0.0  # what FSDP replicating one more block adds, its bytes aside; unknown: free

    @classmethod
    def alike(cls, link: Link) -> "Links":
        """One link for every collective (a preset), copies left out."""
        return cls(link, link, link, send_recv=link)

    def message_seconds(self, size_bytes: float) -> float:
        """One message of `size_bytes` from one rank to another: over send_recv's link, or the all-reduce's."""
        return collective_seconds(self.send_recv or self.all_reduce, "send_recv", size_bytes, 2)

    def broadcast_seconds(self, size_bytes: float, ranks: int) -> float:
        """`size_bytes` from one rank to all `ranks`, pipelined along a chain of messages: (ranks - 1) latencies and
        the size once, over send_recv's link (none with one rank)."""
        if ranks == 1:
            return 0.0
        link = self.send_recv or self.all_reduce
        return (ranks - 1) * link.latency_s + size_bytes * link.seconds_per_byte


@dataclass(frozen=True)
class Preset:
    """A named interconnect: its link per direction, and where its bandwidth comes from."""

    link: Link
    source: str


GBYTE = 1e9
INTRA_NODE_LATENCY_S = 5e-6  # a ring step within a node: a typical NCCL figure, not a specification
NETWORK_LATENCY_S = 15e-6  # a ring step across nodes: a typical RDMA/TCP figure, not a specification
PRESETS = {
    "pcie3": Preset(
        Link(INTRA_NODE_LATENCY_S, 1 / (16 * GBYTE)), "PCI Express 3.0 x16: 16 GB/s per direction (PCI-SIG)"
    ),
    "pcie4": Preset(
        Link(INTRA_NODE_LATENCY_S, 1 / (32 * GBYTE)), "PCI Express 4.0 x16: 32 GB/s per direction (PCI-SIG)"
    ),
    "nvlink3": Preset(
        Link(INTRA_NODE_LATENCY_S, 1 / (300 * GBYTE)), "NVLink 3 (A100): 300 GB/s per direction (NVIDIA)"
    ),
    "nvlink4": Preset(
        Link(INTRA_NODE_LATENCY_S, 1 / (450 * GBYTE)), "NVLink 4 (H100): 450 GB/s per direction (NVIDIA)"
    ),
    "ethernet25": Preset(Link(NETWORK_LATENCY_S, 1 / (25 / 8 * GBYTE)), "25 Gbit/s Ethernet: 3.125 GB/s"),
    "ethernet100": Preset(Link(NETWORK_LATENCY_S, 1 / (100 / 8 * GBYTE)), "100 Gbit/s Ethernet: 12.5 GB/s"),
    "infiniband400": Preset(Link(NETWORK_LATENCY_S, 1 / (400 / 8 * GBYTE)), "InfiniBand NDR 400 Gbit/s: 50 GB/s"),
}

MEASURED = "measured"  # the link the probe fitted here
UNMEASURED_INTERCONNECT = "pcie4"  # predict.interconnect: measured, where one device leaves nothing to measure
UNMEASURED_NETWORK = "ethernet25"  # predict.network: measured, where there is one node and no network to measure


def unknown_links(interconnect: object, network: object) -> list[str]:
    """What is wrong with the names in predict.interconnect and predict.network (a preset's name, `measured`, or a
    link's numbers, which the params schema checks), one line each, naming the choices."""
    choices = ", ".join(PRESETS)
    return [
        f"predict.{key}: {value!r} is no link known here; choose {MEASURED}, one of {choices}, or give the link's "
        "numbers, e.g. {bandwidth_gb_per_s: 100, latency_us: 5, source: my switch's datasheet}"
        for key, value in (("interconnect", interconnect), ("network", network))
        if isinstance(value, str) and value != MEASURED and value not in PRESETS
    ]


def ring_steps(collective: Collective, ranks: int) -> tuple[int, float]:
    """The message steps of a ring collective over `ranks`, and the share of the buffer each rank sends."""
    if collective == "send_recv":
        return 1, 1.0
    if collective == "all_reduce":
        return 2 * (ranks - 1), 2 * (ranks - 1) / ranks
    return ranks - 1, (ranks - 1) / ranks


def collective_seconds(link: Link, collective: Collective, size_bytes: float, ranks: int) -> float:
    """The alpha-beta time of a ring collective of `size_bytes` over `ranks` (none with one rank)."""
    if ranks == 1 and collective != "send_recv":
        return 0.0
    steps, share = ring_steps(collective, ranks)
    return steps * link.latency_s + share * size_bytes * link.seconds_per_byte


def bus_bandwidth(collective: Collective, size_bytes: float, seconds: float, ranks: int) -> tuple[float, float]:
    """nccl-tests' algbw (size / time) and busbw (algbw x the ring's share), in bytes a second."""
    algbw = size_bytes / seconds
    return algbw, algbw * ring_steps(collective, ranks)[1]


def fit_link(collective: Collective, ranks: int, sizes: list[float], seconds: list[float]) -> Link:
    """The alpha and beta that fit the measured times of one collective best (least squares of time against the
    bytes each rank sends), neither below zero."""
    steps, share = ring_steps(collective, ranks)
    sent = [share * size for size in sizes]
    slope, intercept = statistics.linear_regression(sent, seconds)
    if slope <= 0:
        return Link(latency_s=max(statistics.median(seconds), 0.0) / steps, seconds_per_byte=0.0)
    if intercept < 0:  # no latency beyond what the bytes explain: the fit through the origin
        slope = sum(x * y for x, y in zip(sent, seconds, strict=True)) / sum(x * x for x in sent)
        intercept = 0.0
    return Link(latency_s=intercept / steps, seconds_per_byte=slope)


def pipeline_bound(stage_seconds: list[float], micro_batches: int) -> dict[str, float]:
    """The least a pipeline's step can take, m x slowest + (sum - slowest), split into the work shared evenly
    (`compute`, m x the mean stage), the stages' `imbalance` (m x (slowest - mean)) and the `bubble` (sum - slowest;
    (S - 1) x stage for S equal stages: GPipe's and 1F1B's (m + S - 1) x stage)."""
    slowest, mean = max(stage_seconds), statistics.fmean(stage_seconds)
    return {
        "compute": micro_batches * mean,
        "imbalance": micro_batches * (slowest - mean),
        "bubble": sum(stage_seconds) - slowest,
    }


@dataclass(frozen=True)
class StepPrediction:
    """A strategy's predicted step: its compute and the communication left exposed, in seconds."""

    compute_s: float
    exposed_communication_s: float

    @property
    def step_s(self) -> float:
        """The whole predicted step."""
        return self.compute_s + self.exposed_communication_s


BUCKET_COPIES = 2  # a bucketed all-reduce copies every gradient into its flat bucket and back


def data_parallel_step(
    compute_s: float,
    backward_s: float,
    bucket_bytes: Sequence[float],
    links: Links,
    ranks: int,
    hideable: float,
    broadcast_bytes: float = 0.0,
) -> StepPrediction:
    """ddp or allreduce: a replica's compute, the copies of every gradient into its bucket and back (at the links'
    copy bandwidth, within the device's memory: compute on the critical path), and the ring all-reduce of each
    bucket (`bucket_bytes`, in the order they go: buckets.py) over the links' all-reduce, one call each. Of every
    bucket but the last (which waits for the end of the backward pass), the share `hideable` of its all-reduce can go
    while the backward pass goes on, as far as the backward lasts: all of it for ddp on devices of their own, only its
    waits where the replicas share one CPU's cores (1 - the links' cpu_share: the rest keeps a core the backward
    needs), none for allreduce, after backward. The rest is exposed. `broadcast_bytes` go from rank 0 to the others
    before the forward (ddp's buffers, such as BatchNorm's running statistics), exposed too."""
    each = [collective_seconds(links.all_reduce, "all_reduce", size, ranks) for size in bucket_bytes]
    compute_s += BUCKET_COPIES * sum(bucket_bytes) / links.copy_bytes_per_s
    broadcast = links.broadcast_seconds(broadcast_bytes, ranks) if broadcast_bytes else 0.0
    hidden = min(hideable * sum(each[:-1]), backward_s)
    return StepPrediction(compute_s, broadcast + sum(each) - hidden)


def fsdp_step(
    compute_s: float,
    parameter_bytes: float,
    within: Links,
    across: Links,
    replicas: int,
    shards: int,
    gathers_per_step: int,
    units: int,
) -> StepPrediction:
    """fsdp over a mesh of `replicas` x `shards` ranks (FSDP2's: full and grad_op shard over every rank, one replica;
    none makes every rank a replica of shards of one; hybrid shards within a node and replicates across the nodes).
    Within a replica every parameter is all-gathered for forward and (resharded after forward: `gathers_per_step` 2;
    grad_op keeps them: 1) again for backward, and every gradient reduce-scattered, over its `shards` ranks
    (`within`'s fits); then each of the `units` sharded blocks all-reduces its gradients' shard across the `replicas`
    (`across`'s all-reduce, one call a block). None of it is hidden (an upper bound where prefetching overlaps it).
    Each block also has a fixed cost beyond its bytes, as the probe timed it on tiny blocks: `within`'s shard_unit_s
    where there are several shards, `across`'s replicate_unit_s where there are several replicas (each holds the
    block's hooks: both together count them twice, an upper bound). And the copies around the collectives, at
    `within`'s copy bandwidth: each all-gather copies the local shard in and the whole parameters out, the
    reduce-scatter the whole gradients in and the shard out: (gathers + 1) x (1 + 1/shards) times the parameters'
    bytes, 3 + 3/n for full sharding over n ranks and 6 for shards of one."""
    gathers = gathers_per_step * collective_seconds(within.all_gather, "all_gather", parameter_bytes, shards)
    scatter = collective_seconds(within.reduce_scatter, "reduce_scatter", parameter_bytes, shards)
    replicated = 0.0
    if replicas > 1:
        calls_beyond_one = max(units, 1) - 1
        replicated = collective_seconds(across.all_reduce, "all_reduce", parameter_bytes / shards, replicas)
        replicated += calls_beyond_one * ring_steps("all_reduce", replicas)[0] * across.all_reduce.latency_s
    fixed = units * (within.shard_unit_s * (shards > 1) + across.replicate_unit_s * (replicas > 1))
    copies = (gathers_per_step + 1) * (1 + 1 / shards) * parameter_bytes / within.copy_bytes_per_s
    return StepPrediction(compute_s + copies, gathers + scatter + replicated + fixed)


def replicated_step(
    compute_s: float, parameter_bytes: float, batch_bytes: float, link: Link, ranks: int
) -> StepPrediction:
    """dp (torch.nn.DataParallel: one process drives every device): each step copies the parameters from the first
    device to the others (replicate: a broadcast) and reduces every gradient back onto it, a pipelined ring each:
    (n - 1) message steps, the whole size over each link once. Around the forward it scatters the batch's inputs from
    the first device, gathers the outputs onto it, and in backward scatters the outputs' gradients: three copies
    between the first device and each other one, all at once, each of its share, so (n - 1) / n of `batch_bytes`
    (the inputs plus twice the outputs) through the first device's link and one latency each. None of it overlaps
    the compute. The Python driving n devices from one process (its threads and the GIL) is left out: no
    measurement here gives it."""
    if ranks == 1:
        return StepPrediction(compute_s, 0.0)
    one_way = (ranks - 1) * link.latency_s + parameter_bytes * link.seconds_per_byte
    scatter_gather = 3 * link.latency_s + (ranks - 1) / ranks * batch_bytes * link.seconds_per_byte
    return StepPrediction(compute_s, 2 * one_way + scatter_gather)


def pipeline_step(
    stage_seconds: list[float], micro_batches: int, transfer_seconds: Sequence[float] = ()
) -> StepPrediction:
    """A pipeline's step at its schedule's bound (GPipe and 1F1B alike): compute and imbalance, with the bubble counted
    as exposed. `transfer_seconds`, one per boundary between stages, is what one micro-batch's activation (forward) and
    its gradient (backward) take to cross it: each boundary runs as a stage of its own between the two it joins (its
    copies overlap the other stages' compute, as a copy stream or another process does), so transfers lengthen the
    fill and the drain, and bound the step where one outlasts every stage; all of that is exposed too. None given: on
    one machine's memory they are copies, not transfers."""
    bound = pipeline_bound(stage_seconds, micro_batches)
    compute = bound["compute"] + bound["imbalance"]
    if not transfer_seconds:
        return StepPrediction(compute, bound["bubble"])
    joined = [seconds for pair in zip(stage_seconds, [*transfer_seconds, 0.0], strict=True) for seconds in pair][:-1]
    whole = sum(pipeline_bound(joined, micro_batches).values())
    return StepPrediction(compute, whole - compute)


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured."""
    return predicted / measured - 1
