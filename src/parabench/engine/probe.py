"""The collective probe: all-reduce, all-gather, reduce-scatter and send/recv timed over message sizes from a few
bytes up to `predict.probe_max_bytes`, on the backend and devices the data-parallel runs use, with latency and
bandwidth fitted per collective (prediction.fit_link) and algbw and busbw per size, as nccl-tests reports them; the
bandwidth of a copy within a device's memory at the largest size (what bucketing gradients costs); and what FSDP
adds to a step for one more block, its bytes aside (its fixed cost per block), sharded and replicated.

    python -m parabench.engine.probe MACHINE.json LARGEST_BYTES OUT.json ACROSS   (under torchrun: one rank per
                                    device, or one per node; probe_links and probe_network start them)

Across the nodes (hardware.nodes > 1) the same probe runs with one rank on each node, so that every message crosses
the network: node 0's probe stage waits for the others at hardware.rendezvous, each of which runs
`python -m parabench.engine.join_probe --node-rank K` in its copy of the project.

Each measurement is the slowest rank's, devices synchronised before each clock read, after one untimed call. send/recv
is a ping-pong between ranks 0 and 1, half the round trip.
"""

import argparse
import json
import logging
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import torch
import torch.distributed as dist
from torch import nn

from parabench.cli import stage_main
from parabench.io import write_json
from parabench.prediction.collectives import COLLECTIVES, Collective, bus_bandwidth, fit_link
from parabench.records import Across, CollectiveFit, Probed, ProbePoint, ProbeSkipped, SkippedCollective
from parabench.runtime.collectives import gather_objects, synchronize
from parabench.runtime.environment import machine_identity
from parabench.runtime.hardware import Machine
from parabench.runtime.orphans import die_with_parent
from parabench.runtime.process import Process, start, stop
from parabench.runtime.torchrun import Rendezvous, run_workers, worker_command

log = logging.getLogger("parabench.probe")
PROBE_MODULE = "parabench.engine.probe"
JOIN_PROBE_MODULE = "parabench.engine.join_probe"  # what the other nodes run to join the probe between the nodes
SMALLEST_BYTES = 4
SIZE_FACTOR = 8  # each size 8x the last: 4 B, 32 B, ... up to the largest
REPEATS = 5  # timed calls per size (the median is kept), after one untimed call
SHARDED_UNITS = 8  # blocks of the tiny model that times what sharding one more block costs
BANDWIDTH_BOUND_BYTES = 2**20  # from here up a message's bytes, not its latency, take most of its time


def probe_sizes(largest_bytes: int) -> list[int]:
    """The message sizes to time, in bytes: SMALLEST_BYTES times powers of SIZE_FACTOR up to `largest_bytes`, and
    `largest_bytes` itself (a model's whole gradients, say), where the powers miss it."""
    sizes = [SMALLEST_BYTES]
    while sizes[-1] * SIZE_FACTOR <= largest_bytes:
        sizes.append(sizes[-1] * SIZE_FACTOR)
    return sizes if sizes[-1] == largest_bytes else [*sizes, largest_bytes]


def operation(collective: Collective, size_bytes: int, process: Process) -> Callable[[], object]:
    """One call of `collective` on a float32 buffer of `size_bytes` (its total size: the all-gather's output and the
    reduce-scatter's input), on this process's device."""
    ranks, device = process.world_size, process.device
    elements = max(ranks, size_bytes // 4 // ranks * ranks)
    buffer = torch.zeros(elements, device=device)
    shard = torch.zeros(elements // ranks, device=device)
    if collective == "all_reduce":
        return lambda: dist.all_reduce(buffer)
    if collective == "all_gather":
        return lambda: dist.all_gather_single(buffer, shard)
    if collective == "reduce_scatter":
        return lambda: dist.reduce_scatter_single(shard, buffer)
    return lambda: ping_pong(buffer, process.rank)


def ping_pong(buffer: torch.Tensor, rank: int) -> None:
    """Rank 0 sends the buffer to rank 1 and gets it back; other ranks wait."""
    if rank == 0:
        dist.send(buffer, 1)
        dist.recv(buffer, 1)
    elif rank == 1:
        dist.recv(buffer, 0)
        dist.send(buffer, 0)


def timed(call: Callable[[], object], process: Process) -> tuple[float, float]:
    """The median of REPEATS calls after one untimed, each the slowest rank's, devices synchronised; and the share of
    a call's time the ranks' own threads kept a CPU busy (their CPU time over the call's, median over the calls, mean
    over the ranks, at most 1): on a CPU, the rest is waiting, which other work of the rank can fill."""
    times, busy = [], []
    for repeat in range(REPEATS + 1):
        dist.barrier()
        synchronize(process.device)
        began, cpu_began = time.perf_counter(), time.process_time()
        call()
        synchronize(process.device)
        took, cpu = time.perf_counter() - began, time.process_time() - cpu_began
        if repeat:
            times.append(took)
            busy.append(min(1.0, cpu / took))
    slowest: list[float] = [max(per_rank) for per_rank in zip(*gather_objects(times), strict=True)]
    shares: list[float] = [statistics.median(per_rank) for per_rank in gather_objects(busy)]
    return statistics.median(slowest), statistics.fmean(shares)


def timed_seconds(call: Callable[[], object], process: Process) -> float:
    """timed's seconds alone."""
    return timed(call, process)[0]


def probe_collective(collective: Collective, sizes: list[int], process: Process) -> CollectiveFit | SkippedCollective:
    """One collective's times over `sizes` with each size's algbw and busbw and the fitted link; or why the backend
    cannot run it."""
    ranks = process.world_size
    try:
        measured = [timed(operation(collective, size, process), process) for size in sizes]
    except (RuntimeError, NotImplementedError) as refusal:
        return SkippedCollective(status="skipped", reason=f"{dist.get_backend()} cannot run {collective}: {refusal}")
    seconds = [time_s / 2 if collective == "send_recv" else time_s for time_s, _ in measured]
    link = fit_link(collective, ranks, [float(size) for size in sizes], seconds)
    points = []
    for size, time_s, (_, busy) in zip(sizes, seconds, measured, strict=True):
        algbw, busbw = bus_bandwidth(collective, size, time_s, ranks)
        points.append(
            ProbePoint(bytes=size, seconds=time_s, algbw_bytes_per_s=algbw, busbw_bytes_per_s=busbw, cpu_share=busy)
        )
    large = [point.cpu_share for point in points if point.bytes >= BANDWIDTH_BOUND_BYTES] or [points[-1].cpu_share]
    return CollectiveFit(
        status="ran",
        latency_s=link.latency_s,
        bandwidth_bytes_per_s=link.bandwidth_bytes_per_s,
        cpu_share=statistics.median(large),
        points=points,
    )


def copy_bandwidth(size_bytes: int, process: Process) -> float:
    """Bytes a second one rank copies within its device's memory (a buffer of `size_bytes` into another, while every
    rank does the same): what flattening gradients into a bucket and back costs, communication aside."""
    source = torch.zeros(max(1, size_bytes // 4), device=process.device)
    target = torch.empty_like(source)
    return size_bytes / timed_seconds(lambda: target.copy_(source), process)


def fsdp_unit_seconds(process: Process, replicated: bool) -> float:
    """What FSDP2 (fully_shard) adds to a forward and backward for one more block, its bytes aside: a model of
    SHARDED_UNITS linear blocks of 20 parameters each, timed under FSDP block by block and plain, the difference per
    block (its hooks and the bookkeeping and latency of its collectives of a few bytes). Sharded over every rank (two
    all-gathers and a reduce-scatter a block), or `replicated`: every rank a replica (a mesh of ranks x 1, as
    sharding none, and hybrid's replicas across the nodes: an all-reduce a block)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    def blocks() -> nn.Sequential:
        torch.manual_seed(0)
        return nn.Sequential(*(nn.Linear(4, 4) for _ in range(SHARDED_UNITS))).to(process.device)

    plain, under_fsdp = blocks(), blocks()
    if replicated:
        mesh = init_device_mesh(process.device.type, (process.world_size, 1), mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh(process.device.type, (process.world_size,))
    for block in under_fsdp:
        fully_shard(block, mesh=mesh)
    fully_shard(under_fsdp, mesh=mesh)
    inputs = torch.randn(2, 4, device=process.device)

    def step(model: nn.Module) -> Callable[[], object]:
        return lambda: model(inputs).sum().backward()

    fsdp_s, plain_s = timed_seconds(step(under_fsdp), process), timed_seconds(step(plain), process)
    return max(0.0, (fsdp_s - plain_s) / SHARDED_UNITS)


def probe(machine: Machine, largest_bytes: int, out: Path, across: Across) -> None:
    """Time every collective over this job's ranks (across a node's devices, or across the nodes); rank 0 writes what
    it measured and where."""
    process = start(machine)
    sizes = probe_sizes(largest_bytes)
    collectives = {collective: probe_collective(collective, sizes, process) for collective in COLLECTIVES}
    copy_bytes_per_s = copy_bandwidth(sizes[-1], process)
    shard_unit_s, replicate_unit_s = (fsdp_unit_seconds(process, replicated) for replicated in (False, True))
    if process.is_main:
        probed = Probed(
            across=across,
            ranks=process.world_size,
            backend=dist.get_backend(),
            device=process.device.type,
            threads_per_rank=torch.get_num_threads(),
            repeats=REPEATS,
            collectives=collectives,
            copy_bytes_per_s=copy_bytes_per_s,
            shard_unit_s=shard_unit_s,
            replicate_unit_s=replicate_unit_s,
            environment=machine_identity(),
        )
        write_json(out, probed.model_dump(mode="json"))
    stop()


def probe_links(machine: Machine, largest_bytes: int, out: Path) -> None:
    """Time the collectives over this node's devices, one rank each under torchrun; with one device
    there is nothing to communicate, and `out` says so."""
    if machine.devices < 2:
        write_skipped(out, machine.devices, "one device (hardware.devices): no collective to time")
        return
    run_probe(machine.model_copy(update={"nodes": 1}), largest_bytes, out, "devices", None, "probe")


def probe_network(machine: Machine, largest_bytes: int, out: Path, node_rank: int = 0) -> None:
    """Time the collectives between the nodes, one rank on each (device 0), every message crossing the network; node
    0 waits for the others, which join with node_rank 1 to nodes - 1. With one node there is no network, and `out`
    says so."""
    if machine.nodes < 2:
        write_skipped(out, 1, "one node (hardware.nodes): no network to time")
        return
    assert machine.rendezvous is not None, "checked by the params schema"
    rendezvous = Rendezvous(machine.nodes, node_rank, machine.rendezvous, machine.join_timeout_s)
    if node_rank == 0:
        log.warning(
            "probe between nodes: waiting up to %g s (hardware.join_timeout_s) at %s for %d other node(s); on "
            "each, in its copy of the project, run with K = 1 to %d:\n    python -m %s --node-rank K",
            machine.join_timeout_s,
            machine.rendezvous,
            machine.nodes - 1,
            machine.nodes - 1,
            JOIN_PROBE_MODULE,
        )
    one_each = machine.model_copy(update={"devices": 1})
    run_probe(one_each, largest_bytes, out, "nodes", rendezvous, "probe between nodes")


def write_skipped(out: Path, ranks: int, why: str) -> None:
    """`out` says that nothing was timed over `ranks` rank(s), and why."""
    write_json(out, ProbeSkipped(ranks=ranks, skipped=why, environment=machine_identity()).model_dump(mode="json"))


def run_probe(
    machine: Machine, largest_bytes: int, out: Path, across: Across, rendezvous: Rendezvous | None, what: str
) -> None:
    """The probe's ranks under torchrun, one per device of `machine` on this node, meeting the other nodes at
    `rendezvous` (None: this node alone); `what` names the job in a failure."""
    with tempfile.TemporaryDirectory(prefix="parabench-probe-") as scratch:
        machine_file = Path(scratch) / "machine.json"
        machine_file.write_text(machine.model_dump_json())
        arguments = [str(machine_file), str(largest_bytes), str(out), across]
        command = worker_command(PROBE_MODULE, arguments, machine.devices, rendezvous=rendezvous)
        run_workers(command, machine.threads_per_process(machine.devices), what)


def main() -> None:
    """Entry point of the probe's ranks."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("machine", type=Path, help="the Machine as JSON")
    parser.add_argument("largest_bytes", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("across", choices=get_args(Across))
    args = parser.parse_args()
    die_with_parent()
    probe(Machine.model_validate(json.loads(args.machine.read_text())), args.largest_bytes, args.out, args.across)


if __name__ == "__main__":
    stage_main(main)
