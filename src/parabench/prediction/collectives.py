"""The collective model: collectives from a link's latency and bandwidth (the alpha-beta model of Thakur,
Rabenseifner and Gropp, 2005), the named interconnects, and the fit of a link to measured times. Links answer what a
strategy's cost model asks of them (strategies/cost.py's Fabric).

A collective over n ranks of a `size`-byte buffer takes `steps` x alpha + `share` x size x beta with a ring:
all-reduce 2(n-1) steps moving 2(n-1)/n of the buffer per rank, all-gather and reduce-scatter (n-1) steps and (n-1)/n,
send/recv one step and all of it. `share` is also nccl-tests' bus-bandwidth factor: busbw = algbw x share, algbw =
size / time, so busbw is what each link carried and compares across n.
"""

import statistics
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

    def all_reduce_s(self, size_bytes: float, ranks: int) -> float:
        """A ring all-reduce of `size_bytes` over `ranks`, over the all-reduce's link."""
        return collective_seconds(self.all_reduce, "all_reduce", size_bytes, ranks)

    def all_gather_s(self, size_bytes: float, ranks: int) -> float:
        """A ring all-gather of `size_bytes` (the whole, gathered) over `ranks`."""
        return collective_seconds(self.all_gather, "all_gather", size_bytes, ranks)

    def reduce_scatter_s(self, size_bytes: float, ranks: int) -> float:
        """A ring reduce-scatter of `size_bytes` (the whole, scattered) over `ranks`."""
        return collective_seconds(self.reduce_scatter, "reduce_scatter", size_bytes, ranks)

    def all_reduce_latency_s(self, ranks: int) -> float:
        """What one more all-reduce call over `ranks` adds beyond its bytes: its ring's message steps' latencies."""
        return ring_steps("all_reduce", ranks)[0] * self.all_reduce.latency_s

    def copy_s(self, size_bytes: float) -> float:
        """A copy of `size_bytes` within a device's memory (into a bucket, or out of it)."""
        return size_bytes / self.copy_bytes_per_s

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
