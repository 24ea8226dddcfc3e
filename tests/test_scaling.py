"""What more devices would buy: the prediction checked at a benchmark's multi-device cells from the ceiling's compute
and the probe's link, and extended to predict.devices over the links params.yaml names."""

from typing import Any

import pytest

from parabench.config import GivenLink, PredictOptions
from parabench.engine.cells import Cell, CellRuns
from parabench.prediction.checks import checked_sweep_cells
from parabench.prediction.collectives import PRESETS, Link, Links, collective_seconds
from parabench.prediction.extension import cut_at
from parabench.prediction.links import link_at, measured_links
from parabench.prediction.predict import compact, predict
from parabench.records import (
    CellFigures,
    CellsSummary,
    CollectiveFit,
    PredictionCheck,
    Probe,
    Probed,
    ProbeSkipped,
    RunRecord,
    SkippedCollective,
    SweepCell,
)
from parabench.report.benchmark import summarize_cells
from parabench.strategies.cost import ModelSizes, ReplicaCost, ReplicaStep, pipeline_step
from parabench.strategies.fsdp import fsdp_step
from parabench.strategies.partition import CutDetails
from parabench.strategies.registry import STRATEGIES
from tests.setups import cpu_setup, run_record, tiny_plan
from tests.test_benchmark_report import cell_run, entries, turn


def strategy_step(
    name: str,
    compute_s: float,
    forward_backward_s: float,
    sizes: ModelSizes,
    links: Links,
    devices: int,
    own_devices: bool,
    details: dict[str, Any] | None = None,
) -> Any:
    """The strategy `name`'s own cost model of one step of `devices` replicas."""
    cost = STRATEGIES[name].cost
    assert isinstance(cost, ReplicaCost)
    recorded = STRATEGIES[name].details_of(details or {})
    return cost.step(ReplicaStep(compute_s, forward_backward_s, sizes, links, devices, own_devices, recorded))


ALL_REDUCE = CollectiveFit(status="ran", latency_s=1e-4, bandwidth_bytes_per_s=1e9, cpu_share=1.0, points=[])
PROBE = Probed(  # copies at no cost, no cost per sharded block: the link alone
    across="devices",
    ranks=2,
    backend="gloo",
    device="cpu",
    threads_per_rank=1,
    repeats=5,
    collectives={"all_reduce": ALL_REDUCE},
    copy_bytes_per_s=float("inf"),
    shard_unit_s=0.0,
    replicate_unit_s=0.0,
    environment={},
)
ONE_NODE = ProbeSkipped(ranks=1, skipped="one node (hardware.nodes): no network to time", environment={})
OPTIONS = PredictOptions(
    devices=[4, 64], devices_per_node=8, interconnect="measured", network="ethernet25", probe_max_bytes=4
)


def test_a_data_parallel_cell_is_predicted_from_the_ceiling_and_the_probe_s_all_reduce():
    benchmark = summarize_cells(entries())
    prediction = predict(benchmark, OPTIONS, "strong", PROBE, ONE_NODE)
    ddp = next(check for check in prediction.checks if check.cell == "ddp")
    cells = benchmark.cells
    gradients = cells["single"].parameters * 4
    all_reduce = collective_seconds(Link(1e-4, 1e-9), "all_reduce", gradients, 2)
    expected = cells["ceiling"].step_time_s.median + all_reduce  # one CPU: nothing hidden
    assert ddp.predicted_step_s == pytest.approx(expected)
    assert ddp.measured_step_s == cells["ddp"].step_time_s.median
    assert ddp.error == pytest.approx(expected / ddp.measured_step_s - 1)
    assert {check.cell for check in prediction.checks} == {"ddp"}, "a cut without stage times is not checked"
    assert prediction.median_abs_error == pytest.approx(abs(ddp.error))


def test_cells_measured_apart_beyond_the_noise_are_checked_for_the_order_their_predictions_give():
    """ddp's two turns ran 0.1 and 0.2 s steps, fsdp's 0.4 and allreduce's 0.6: every pair apart beyond the noise.
    fsdp's predicted collectives outlast the all-reduce, so it is predicted slower than ddp (as measured) but also
    than allreduce (measured faster); ddp and allreduce share one CPU's cores with the all-reduce, nothing hidden, so
    they are predicted alike (one bucket each, no buffers): no order at all, which does not keep the measured one."""
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    timed = entries() + [
        CellRuns(
            Cell("fashion_mnist", strategy), tiny_plan(strategy, two, "benchmark", batch_size=64), run=cell_run(turns)
        )
        for strategy, turns in (
            ("fsdp", [turn([0.4] * 3, 2), turn([0.4] * 3, 2)]),
            ("allreduce", [turn([0.6] * 3, 2), turn([0.6] * 3, 2)]),
        )
    ]
    prediction = predict(summarize_cells(timed), OPTIONS, "strong", PROBE, ONE_NODE)
    orders = {(order.faster, order.slower): order for order in prediction.order_checks}
    assert set(orders) == {("ddp", "fsdp"), ("ddp", "allreduce"), ("fsdp", "allreduce")}
    assert orders["ddp", "fsdp"].agrees and orders["ddp", "fsdp"].predicted_ratio > 1
    assert orders["ddp", "allreduce"].predicted_ratio == pytest.approx(1.0) and not orders["ddp", "allreduce"].agrees
    assert not orders["fsdp", "allreduce"].agrees
    assert orders["fsdp", "allreduce"].measured_ratio == pytest.approx(1.5)
    assert orders["fsdp", "allreduce"].measured_ci95 == pytest.approx([1.5, 1.5])
    assert not prediction.within_goal, "an order the prediction does not keep misses the goal"


def test_on_one_cpu_ddp_pays_its_extra_bucket_and_its_buffers_broadcast_beyond_allreduce():
    """Gradients of 10, 10 and 2 MiB: DDP all-reduces the last 2 MiB first (past 1 MiB) and then the other 20, where
    the hand-written allreduce sends all 22 MiB at once; DDP also broadcasts 1 MB of buffers. Nothing is hidden on
    one CPU, so ddp's step is one more ring (2 latencies over 2 ranks) and one message longer than allreduce's."""
    mib = 2**20
    sizes = ModelSizes(gradient_bytes=(10 * mib, 10 * mib, 2 * mib), buffer_bytes=1_000_000)
    link = Link(1e-4, 1e-9)
    links = Links.alike(link)
    ddp, allreduce = (strategy_step(name, 1.0, 0.9, sizes, links, 2, False) for name in ("ddp", "allreduce"))
    assert allreduce.exposed_communication_s == pytest.approx(collective_seconds(link, "all_reduce", 22 * mib, 2))
    extra_ring, broadcast = 2 * 1e-4, 1e-4 + 1_000_000 * 1e-9
    assert ddp.step_s - allreduce.step_s == pytest.approx(extra_ring + broadcast)


def test_fsdp_is_predicted_over_the_mesh_its_cell_recorded():
    """Sharding none records a mesh of 2 x 1 (every rank a replica): each of its 3 blocks all-reduces its gradients
    across the 2 replicas, one call each, none hidden (not DDP's buckets); full sharding (a mesh of 2) gathers the
    parameters twice and reduce-scatters the gradients instead."""
    mib = 2**20
    sizes = ModelSizes(gradient_bytes=(10 * mib, 10 * mib, 2 * mib), buffer_bytes=1_000_000)
    link = Link(1e-4, 1e-9)
    links = Links.alike(link)
    unsharded = strategy_step(
        "fsdp", 1.0, 0.9, sizes, links, 2, False, {"sharding": "none", "mesh": [2, 1], "sharded_blocks": 3}
    )
    ring = collective_seconds(link, "all_reduce", 22 * mib, 2)
    assert unsharded.step_s == pytest.approx(1.0 + ring + 2 * 2 * 1e-4), "three calls: two more rings' latencies"
    full = strategy_step(
        "fsdp", 1.0, 0.9, sizes, links, 2, False, {"sharding": "full", "mesh": [2], "sharded_blocks": 3}
    )
    gather, scatter = (collective_seconds(link, name, 22 * mib, 2) for name in ("all_gather", "reduce_scatter"))
    assert full.step_s == pytest.approx(1.0 + 2 * gather + scatter)
    assert strategy_step("fsdp", 1.0, 0.9, sizes, links, 2, False, {"sharded_blocks": 3}) == full, "none recorded"


def test_on_one_cpu_ddp_hides_the_waits_of_its_early_buckets_the_probe_measured():
    """The probe saw an all-reduce keep its rank's CPU busy 80% of its time: on one CPU ddp hides the other 20% of
    every bucket but its last behind the backward; allreduce, after the backward, hides none; on devices of their own
    ddp hides all of it."""
    mib = 2**20
    sizes = ModelSizes(gradient_bytes=(20 * mib, 20 * mib, 20 * mib), buffer_bytes=0)
    busy = PROBE.model_copy(update={"collectives": {"all_reduce": ALL_REDUCE.model_copy(update={"cpu_share": 0.8})}})
    links = measured_links(busy)
    assert links is not None and links.cpu_share == 0.8
    link = Link(1e-4, 1e-9)
    first, rest = (collective_seconds(link, "all_reduce", size, 2) for size in (20 * mib, 40 * mib))
    ddp = strategy_step("ddp", 1.0, 3.0, sizes, links, 2, own_devices=False)
    assert ddp.exposed_communication_s == pytest.approx(first + rest - 0.2 * first), "DDP's buckets: 20, then 40 MiB"
    allreduce = strategy_step("allreduce", 1.0, 3.0, sizes, links, 2, own_devices=False)
    assert allreduce.exposed_communication_s == pytest.approx(3 * collective_seconds(link, "all_reduce", 20 * mib, 2))
    own = strategy_step("ddp", 1.0, 3.0, sizes, links, 2, own_devices=True)
    assert own.exposed_communication_s == pytest.approx(rest), "beside the compute, all but the last bucket hides"


def test_cells_within_the_noise_of_each_other_have_no_order_to_keep():
    """fsdp's turns bracket ddp's (0.1 then 0.2 s against 0.15 and 0.15): their ratio's interval holds 1."""
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    fsdp = CellRuns(
        Cell("fashion_mnist", "fsdp"),
        tiny_plan("fsdp", two, "benchmark", batch_size=64),
        run=cell_run([turn([0.15] * 3, 2), turn([0.15] * 3, 2)]),
    )
    prediction = predict(summarize_cells([*entries(), fsdp]), OPTIONS, "strong", PROBE, ONE_NODE)
    assert {check.cell for check in prediction.checks} == {"ddp", "fsdp"}
    assert prediction.order_checks == []


def test_predictions_at_more_devices_name_their_link_and_are_unvalidated_off_this_machine():
    prediction = predict(summarize_cells(entries()), OPTIONS, "strong", PROBE, ONE_NODE)
    rows = {(row.strategy, row.devices): row for row in prediction.predictions}
    strategies = ("ddp", "allreduce", "fsdp", "zero", "pipeline", "model_parallel")
    assert set(rows) == {(strategy, n) for strategy in strategies for n in (4, 64)} | {("dp", 4)}, (
        "dp's one process drives one node's devices: not 64 over 8 nodes"
    )
    assert rows["dp", 4].speedup < rows["allreduce", 4].speedup, "dp's input and optimizer stay whole"
    assert rows["model_parallel", 64].speedup == pytest.approx(1.0), "stages one after another: memory, not speed"
    assert rows["model_parallel", 64].exposed_share > rows["model_parallel", 4].exposed_share > 0, "idle stages"
    assert rows["ddp", 4].link.startswith("measured: gloo") and rows["ddp", 64].link.startswith("network ethernet25")
    assert not any(row.validated for row in rows.values()), "a CPU's devices are virtual: devices of their own differ"
    assert rows["ddp", 64].efficiency < rows["ddp", 4].efficiency <= 1
    assert rows["ddp", 4].speedup >= rows["allreduce", 4].speedup, "ddp hides some, allreduce none"
    shown = compact(prediction, OPTIONS)
    assert set(shown) == {"prediction_median_error", "ddp_efficiency_at_64"}


def fsdp_cell(details: dict[str, Any]) -> CellRuns:
    """A benchmark's fsdp cell over 2 processes whose runs recorded `details` (its sharding, mesh and blocks)."""
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    measured = cell_run([turn([0.15] * 3, 2) for _ in range(2)]).model_copy(update={"strategy_details": details})
    return CellRuns(Cell("fashion_mnist", "fsdp"), tiny_plan("fsdp", two, "benchmark", batch_size=64), run=measured)


def test_fsdp_at_more_devices_keeps_the_sharding_its_cell_ran_and_hybrid_shards_within_a_node():
    """Hybrid sharding at 64 devices, 8 a node: its mesh is 8 nodes x 8 shards, the all-gathers and the reduce-scatter
    within a node over the link measured here, each of its 3 blocks all-reducing an eighth of the gradients across
    the nodes over ethernet25. Within one node (4 devices) hybrid is full sharding; sharding none is a mesh of 4 x 1.
    Over NVLink within the nodes, hybrid beats full sharding over the network."""

    def rows(details: dict[str, Any], options: PredictOptions = OPTIONS) -> dict[int, float]:
        summary = summarize_cells([*entries(), fsdp_cell(details)])
        found = predict(summary, options, "strong", PROBE, ONE_NODE).predictions
        return {row.devices: row.speedup for row in found if row.strategy == "fsdp"}

    hybrid_details = {"sharding": "hybrid", "mesh": [1, 2], "sharded_blocks": 3}
    full_details = {"sharding": "full", "mesh": [2], "sharded_blocks": 3}
    hybrid, full = rows(hybrid_details), rows(full_details)
    single = summarize_cells(entries()).cells["single"]
    assert isinstance(single, CellFigures)
    single_s, measured = single.step_time_s.median, measured_links(PROBE)
    assert measured is not None
    ethernet = Links.alike(PRESETS["ethernet25"].link)
    step = fsdp_step(single_s / 64, 4e6, measured, ethernet, 8, 8, 2, 3)
    assert hybrid[64] == pytest.approx(single_s / step.step_s)
    assert hybrid[4] == pytest.approx(full[4]), "one node: hybrid shards over all of it"
    unsharded = rows({"sharding": "none", "mesh": [2, 1], "sharded_blocks": 3})
    every_rank_a_replica = fsdp_step(single_s / 4, 4e6, measured, measured, 4, 1, 2, 3)
    assert unsharded[4] == pytest.approx(single_s / every_rank_a_replica.step_s)
    nvlink = OPTIONS.model_copy(update={"interconnect": "nvlink4"})
    assert rows(hybrid_details, nvlink)[64] > rows(full_details, nvlink)[64], "an eighth crosses the network"


def test_dp_at_more_devices_scatters_the_bytes_a_unit_of_single_took():
    """A unit of 1 MB in (and 40 B out) over the probe's 1 GB/s: at 4 devices 3/4 of the batch's 64 MB crosses the
    first device's link, 48 ms more a step than with the fixture's 3 kB images."""
    benchmark = summarize_cells(entries())
    single = benchmark.cells["single"]
    assert (single.input_bytes_per_unit, single.output_bytes_per_unit) == (28 * 28 * 4, 40), "as the run measured"
    heavy = single.model_copy(update={"input_bytes_per_unit": 1e6 + 28 * 28 * 4})
    heavier = benchmark.model_copy(update={"cells": {**benchmark.cells, "single": heavy}})

    def dp_step(summary: CellsSummary) -> float:
        row = next(
            row for row in predict(summary, OPTIONS, "strong", PROBE, ONE_NODE).predictions if row.strategy == "dp"
        )
        return single.step_time_s.median / row.speedup

    assert dp_step(heavier) - dp_step(benchmark) == pytest.approx(0.75 * 64 * 1e6 / 1e9)


def test_under_weak_scaling_each_replica_computes_single_s_whole_step_and_the_batch_grows_with_the_devices():
    """A replica's 4 MB of gradients fill one bucket, so ddp hides none of its all-reduce at any N: strong scaling
    gives single's step over (1/N of it + the all-reduce); weak, N batches of single's in (its step + the same
    all-reduce). A cut model has no replicas: its batch, and its prediction, stay."""
    benchmark = summarize_cells(entries())
    by_rule = {
        rule: {
            (row.strategy, row.devices): row for row in predict(benchmark, OPTIONS, rule, PROBE, ONE_NODE).predictions
        }
        for rule in ("strong", "weak")
    }
    step = benchmark.cells["single"].step_time_s.median
    all_reduce = collective_seconds(Link(1e-4, 1e-9), "all_reduce", 4e6, 4)
    assert by_rule["strong"]["ddp", 4].speedup == pytest.approx(step / (step / 4 + all_reduce))
    assert by_rule["weak"]["ddp", 4].speedup == pytest.approx(4 * step / (step + all_reduce))
    assert by_rule["weak"]["ddp", 4].efficiency > by_rule["strong"]["ddp", 4].efficiency
    assert by_rule["weak"]["dp", 4].speedup < by_rule["weak"]["ddp", 4].speedup, "dp's first device takes in 4 batches"
    for cut in ("pipeline", "model_parallel"):
        assert by_rule["weak"][cut, 4] == by_rule["strong"][cut, 4]
    assert predict(benchmark, OPTIONS, "weak", PROBE, ONE_NODE).scaling == "weak"


def test_the_link_changes_kind_beyond_a_node():
    assert link_at(8, OPTIONS, PROBE, ONE_NODE)[2] is True
    link, text, measured = link_at(9, OPTIONS, PROBE, ONE_NODE)
    assert link == Links.alike(PRESETS["ethernet25"].link) and not measured and "3.125 GB/s" in text
    preset = OPTIONS.model_copy(update={"interconnect": "nvlink4"})
    assert link_at(2, preset, PROBE, ONE_NODE)[0] == Links.alike(PRESETS["nvlink4"].link)
    one_device = ProbeSkipped(ranks=1, skipped="one device", environment={})
    assert link_at(2, OPTIONS, one_device, ONE_NODE)[2] is False, "nothing measured: a preset, said so"


def test_a_link_given_by_its_numbers_is_used_as_given_and_never_validated():
    given = OPTIONS.model_copy(
        update={"interconnect": GivenLink(bandwidth_gb_per_s=64, latency_us=3, source="PCI Express 5.0 x16")}
    )
    links, text, measured = link_at(4, given, PROBE, ONE_NODE)
    assert links == Links.alike(Link(3e-6, 1 / 64e9)) and not measured
    assert text == "64 GB/s, 3 us a step (PCI Express 5.0 x16)"
    rows = {
        (row.strategy, row.devices): row
        for row in predict(summarize_cells(entries()), given, "strong", PROBE, ONE_NODE).predictions
    }
    assert rows["ddp", 4].link == text and not rows["ddp", 4].validated


def test_beyond_a_node_the_measured_network_is_the_probe_between_the_nodes_or_ethernet25_on_one_node():
    """predict.network: measured takes the probe's fit between the nodes (10 ms, 1 GB/s here: far from the in-node
    link); on one node there is nothing to measure, and the row says which preset stands in."""
    measured = OPTIONS.model_copy(update={"network": "measured"})
    slow = CollectiveFit(status="ran", latency_s=1e-2, bandwidth_bytes_per_s=1e9, cpu_share=1.0, points=[])
    network = PROBE.model_copy(update={"across": "nodes", "collectives": {"all_reduce": slow}})
    links, text, validated = link_at(9, measured, PROBE, network)
    assert links.all_reduce == Link(1e-2, 1e-9) and validated and text == "network measured: gloo between 2 nodes"
    assert link_at(8, measured, PROBE, network)[0].all_reduce == Link(1e-4, 1e-9), "within a node: the in-node probe"
    links, text, validated = link_at(9, measured, PROBE, ONE_NODE)
    assert links == Links.alike(PRESETS["ethernet25"].link) and not validated and "nothing measured" in text
    rows = predict(summarize_cells(entries()), measured, "strong", PROBE, network).predictions
    slower = predict(
        summarize_cells(entries()),
        measured,
        "strong",
        PROBE,
        network.model_copy(update={"collectives": {"all_reduce": slow.model_copy(update={"latency_s": 1e-1})}}),
    ).predictions
    ddp_64 = [next(row for row in found if (row.strategy, row.devices) == ("ddp", 64)) for found in (rows, slower)]
    assert ddp_64[1].speedup < ddp_64[0].speedup and ddp_64[0].link.startswith("network measured")


NETWORK = PROBE.model_copy(  # between the nodes: ten times the in-node latency, a tenth of its bandwidth
    update={
        "across": "nodes",
        "collectives": {
            "all_reduce": CollectiveFit(
                status="ran", latency_s=1e-3, bandwidth_bytes_per_s=1e8, cpu_share=1.0, points=[]
            )
        },
    }
)


def across_nodes(train: RunRecord, network: Probe = NETWORK, probe: Probe = PROBE) -> PredictionCheck | None:
    """The check a train run gets beside entries()'s benchmark cells (single of 64 samples; ceiling of 2 copies), node
    0's devices probed as `probe`."""
    prediction = predict(summarize_cells(entries()), OPTIONS, "strong", probe, network, train)
    return next((check for check in prediction.checks if "train run" in check.cell), None)


def two_node_run(
    processes: int = 2, hosts: tuple[str, ...] = ("node-a", "node-b"), strategy: str = "ddp", **fields: Any
) -> RunRecord:
    """`strategy` over two nodes, `processes` in all, on the benchmark's global batch of 64."""
    record = run_record(strategy, [0.3, 0.25, 0.35, 0.3], devices=processes, global_batch=64, **fields)
    return record.model_copy(update={"environment": {"nodes": 2, "node_hosts": list(hosts)}})


def test_a_train_run_over_two_nodes_is_predicted_from_single_and_the_probe_between_the_nodes():
    """One process a node: a replica computes single's step with its input and forward and backward halved (32 of
    single's 64 samples), its optimizer whole; the gradients' one DDP bucket (4 MB) crosses the network probe's fit,
    all of it exposed (the last bucket), and the train run's own median step is what it is checked against."""
    check = across_nodes(two_node_run())
    assert check is not None and check.cell == "ddp across 2 nodes (the train run)" and check.devices == 2
    single = summarize_cells(entries()).cells["single"]
    assert isinstance(single, CellFigures)
    parts = single.time_split_s
    compute = single.step_time_s.median - 0.5 * (parts["input"] + parts["compute"])
    assert compute == pytest.approx(0.01 + 0.07 + 0.04, rel=0.01), "single: 0.2 s, of it 10% input, 20% optimizer"
    ring = collective_seconds(Link(1e-3, 1e-8), "all_reduce", 4_000_000, 2)
    assert check.predicted_step_s == pytest.approx(compute + ring)
    assert check.predicted_exposed_communication_s == pytest.approx(ring)
    assert check.measured_step_s == pytest.approx(0.3) and check.error == pytest.approx((compute + ring) / 0.3 - 1)


def test_a_train_run_with_several_processes_a_node_is_predicted_from_the_ceiling_of_as_many_copies():
    """Two processes on each of two nodes: a replica computes the ceiling's step (2 copies of 32 samples side by side)
    with its input and forward and backward halved again (16 samples); the ring spans all four processes."""
    check = across_nodes(two_node_run(processes=4))
    ceiling = summarize_cells(entries()).cells["ceiling"]
    assert check is not None and isinstance(ceiling, CellFigures)
    parts = ceiling.time_split_s
    compute = ceiling.step_time_s.median - 0.5 * (parts["input"] + parts["compute"])
    ring = collective_seconds(Link(1e-3, 1e-8), "all_reduce", 4_000_000, 4)
    assert check.predicted_step_s == pytest.approx(compute + ring) and check.devices == 4


def test_nodes_on_one_host_compute_beside_every_process_of_the_run_and_say_so():
    """Two nodes on one host (loopback), one process each: both share its CPU, so a replica computes as the ceiling's
    2 copies side by side; with two processes a node there is no ceiling of 4 copies, and single's compute stands
    in, said so in the row."""
    ceiling = summarize_cells(entries()).cells["ceiling"]
    assert isinstance(ceiling, CellFigures)
    one_host = across_nodes(two_node_run(hosts=("laptop", "laptop")))
    assert one_host is not None and one_host.cell == "ddp across 2 nodes on one host (the train run)"
    assert one_host.predicted_step_s - one_host.predicted_exposed_communication_s == pytest.approx(
        ceiling.step_time_s.median, rel=1e-6
    ), "the ceiling's copies computed 32 samples each, as each replica did"
    crowded = across_nodes(two_node_run(processes=4, hosts=("laptop", "laptop")))
    assert crowded is not None and crowded.cell == (
        "ddp across 2 nodes on one host (the train run; single's compute, alone there: no ceiling of 4 copies ran)"
    )


def test_runs_the_network_cannot_check_get_no_check():
    one_node = run_record("ddp", [0.3] * 4, devices=2, global_batch=64)
    assert across_nodes(one_node.model_copy(update={"environment": {"nodes": 1}})) is None, "the benchmark's cells"
    assert across_nodes(two_node_run(), network=ONE_NODE) is None, "no probe between the nodes"
    assert across_nodes(two_node_run(processes=6)) is None, "no cell of 3 processes side by side"
    pipeline = two_node_run().model_copy(update={"strategy": "pipeline"})
    assert across_nodes(pipeline) is None, "a pipeline whose stages were not timed (no distributed engine)"
    single_cpu = PROBE.model_copy(update={"collectives": {}})  # within the node: nothing fitted
    hybrid = two_node_run(processes=4, strategy="fsdp", strategy_details=HYBRID_4)
    assert across_nodes(hybrid, probe=single_cpu) is None, "shards within a node, and no link measured there"
    assert across_nodes(pipeline_run(4), probe=single_cpu) is None, "a boundary within a node, no link there"


HYBRID_4 = {"sharding": "hybrid", "mesh": [2, 2], "sharded_blocks": 3}


def pipeline_run(processes: int) -> RunRecord:
    """The distributed pipeline over two nodes: a stage a process, 4 micro-batches, 1 MB across each boundary."""
    details = {
        "engine": "distributed",
        "stage_seconds": [0.01 * (stage + 1) for stage in range(processes)],
        "boundary_bytes": [1_000_000] * (processes - 1),
        "micro_batches": 4,
    }
    return two_node_run(processes=processes, strategy="pipeline", replicas=1, strategy_details=details)


def test_a_distributed_pipeline_over_two_nodes_sends_what_crosses_between_them_over_the_network():
    """Four stages, two a node: the middle boundary joins the nodes and crosses the network probe's fit (its send/recv
    falls back to its all-reduce's), the other two stay within a node over node 0's probe; the stages take the seconds
    the run timed, plus single's input and optimizer."""
    check = across_nodes(pipeline_run(4))
    assert check is not None and check.cell == "pipeline across 2 nodes (the train run)" and check.devices == 4
    within, network = (Link(1e-4, 1e-9), Link(1e-3, 1e-8))
    transfers = [2 * collective_seconds(link, "send_recv", 1_000_000, 2) for link in (within, network, within)]
    bound = pipeline_step([0.01, 0.02, 0.03, 0.04], 4, transfers)
    single = summarize_cells(entries()).cells["single"]
    assert isinstance(single, CellFigures)
    parts = single.time_split_s
    assert check.predicted_step_s == pytest.approx(bound.step_s + parts["input"] + parts["optimizer"])
    two = across_nodes(pipeline_run(2))
    assert two is not None and two.predicted_exposed_communication_s == pytest.approx(
        pipeline_step(
            [0.01, 0.02], 4, [2 * collective_seconds(network, "send_recv", 1_000_000, 2)]
        ).exposed_communication_s
    ), "one stage a node: its one boundary crosses the network"


def test_fsdp_hybrid_over_two_nodes_shards_within_each_and_all_reduces_its_shard_across_them():
    """HSDP over 2 nodes of 2 processes (a mesh of 2 x 2): a replica computes the ceiling's step at half its share, its
    two all-gathers and reduce-scatter cross node 0's probe between its 2 ranks, and each of its 3 blocks all-reduces
    half the gradients (4 MB in all) between the 2 nodes over the network probe's fit."""
    check = across_nodes(two_node_run(processes=4, strategy="fsdp", strategy_details=HYBRID_4))
    ceiling = summarize_cells(entries()).cells["ceiling"]
    assert check is not None and isinstance(ceiling, CellFigures)
    assert check.cell == "fsdp hybrid across 2 nodes (the train run)"
    parts = ceiling.time_split_s
    compute = ceiling.step_time_s.median - 0.5 * (parts["input"] + parts["compute"])
    within, network = (Link(1e-4, 1e-9), Link(1e-3, 1e-8))
    inside = 2 * collective_seconds(within, "all_gather", 4_000_000, 2)
    inside += collective_seconds(within, "reduce_scatter", 4_000_000, 2)
    between = collective_seconds(network, "all_reduce", 2_000_000, 2) + 2 * 2 * network.latency_s
    assert check.predicted_step_s == pytest.approx(compute + inside + between)
    one_each = across_nodes(
        two_node_run(strategy="fsdp", strategy_details={"sharding": "hybrid", "mesh": [2, 1], "sharded_blocks": 3}),
        probe=ONE_NODE,
    )
    assert one_each is not None, "one process a node: no link within a node is needed"


def test_each_collective_crosses_the_probe_s_own_fit_or_the_all_reduce_s():
    collectives = {
        "all_reduce": ALL_REDUCE,
        "all_gather": CollectiveFit(status="ran", latency_s=2e-4, bandwidth_bytes_per_s=5e8, cpu_share=1.0, points=[]),
        "reduce_scatter": SkippedCollective(status="skipped", reason="gloo cannot run it"),
    }
    links = measured_links(PROBE.model_copy(update={"collectives": collectives}))
    assert links is not None and links.all_gather == Link(2e-4, 1 / 5e8)
    assert links.reduce_scatter == links.all_reduce == Link(1e-4, 1e-9), "what the backend cannot run: the all-reduce's"


def test_a_sweep_s_distributed_pipeline_cells_are_predicted_from_their_stages_and_single():
    figures = summarize_cells(entries()).cells["single"]
    single = figures.model_copy(update={"time_split_s": {"input": 0.01, "optimizer": 0.02}})
    staged = {"engine": "distributed", "stage_seconds": [0.1, 0.3], "micro_batches": 4, "boundary_bytes": [1_000_000]}
    steps = figures.step_time_s.model_copy(update={"median": 1.5})
    gpipe = figures.model_copy(
        update={
            "processes": 2,
            "devices": 2,
            "strategy_details": staged,
            "step_time_s": steps,
            "median_precision": 0.01,
        }
    )
    inprocess = gpipe.model_copy(update={"processes": 1, "strategy_details": {**staged, "engine": "inprocess"}})
    cells = [
        SweepCell(curve="single", value=None, figures=single),
        SweepCell(curve="gpipe", value=2, figures=gpipe),
        SweepCell(curve="inprocess", value=2, figures=inprocess),
    ]

    def strategy_of(curve: str) -> str:  # the sweep's curves are the pipeline's; its line, single's
        return "single" if curve == "single" else "pipeline"

    (only,) = checked_sweep_cells(cells, None, strategy_of)
    assert only.cell == "gpipe 2" and only.predicted_step_s == pytest.approx(4 * 0.3 + 0.1 + 0.03)
    assert only.error == pytest.approx(1.33 / 1.5 - 1) and only.within is True
    # with the probe's link (1e-4 s, 1 GB/s), each micro-batch's 1 MB activation and its gradient cross the boundary
    # as the benchmark's checks send them: a third stage of 2 x 1.1 ms between the two, off the 0.3 s bottleneck
    (sent,) = checked_sweep_cells(cells, Links.alike(Link(1e-4, 1e-9)), strategy_of)
    assert sent.predicted_step_s == pytest.approx(4 * 0.3 + 0.1 + 0.03 + 2 * 1.1e-3)


def test_model_parallel_is_single_s_step_its_stages_one_after_another():
    """Stages timed at 0.03 and 0.05 s: one after another they are single's forward and backward, timed whole, in
    those shares (3/8 and 5/8); while the second stage computes the first idles."""
    benchmark = summarize_cells(entries())
    cells = benchmark.cells
    cells["model_parallel"] = cells["model_parallel"].model_copy(
        update={"strategy_details": {"cut": [3, 3], "stage_seconds": [0.03, 0.05]}}
    )
    prediction = predict(benchmark, OPTIONS, "strong", PROBE, ONE_NODE)
    (checked,) = [check for check in prediction.checks if check.cell == "model_parallel"]
    parts = cells["single"].time_split_s
    assert checked.predicted_step_s == pytest.approx(parts["compute"] + parts["input"] + parts["optimizer"])
    assert checked.predicted_exposed_communication_s == pytest.approx(3 / 8 * parts["compute"])


def test_model_parallel_on_devices_of_their_own_sends_each_boundary_s_activation_and_gradient_over_the_link():
    """On a CPU's virtual devices the activation stays in the process's memory (the test above); on GPUs of their own
    it crosses the link both ways: the probe's all-reduce link, 1e-4 s and 1 GB/s, for 1 MB."""
    benchmark = summarize_cells(entries())
    cells = benchmark.cells
    details = {"cut": [3, 3], "stage_seconds": [0.03, 0.05], "boundary_bytes": [10**6]}
    cells["model_parallel"] = cells["model_parallel"].model_copy(
        update={"strategy_details": details, "devices_virtual": False}
    )
    (checked,) = [
        check
        for check in predict(benchmark, OPTIONS, "strong", PROBE, ONE_NODE).checks
        if check.cell == "model_parallel"
    ]
    parts = cells["single"].time_split_s
    crossing = 2 * (1e-4 + 10**6 * 1e-9)
    assert checked.predicted_step_s == pytest.approx(
        sum(parts[part] for part in ("compute", "input", "optimizer")) + crossing
    )


def test_a_cut_model_is_predicted_on_at_most_one_device_per_block_its_boundaries_crossing_the_link():
    benchmark = summarize_cells(entries())
    cells = benchmark.cells
    staged = {
        "cut": [3, 3],
        "stage_seconds": [0.03, 0.05],
        "micro_batches": 4,
        "block_seconds": [0.01] * 6,
        "block_output_bytes_per_unit": [1000.0] * 5,
    }
    cells["model_parallel"] = cells["model_parallel"].model_copy(update={"strategy_details": staged})
    options = OPTIONS.model_copy(update={"devices": [4, 8]})
    rows = {
        (row.strategy, row.devices): row for row in predict(benchmark, options, "strong", PROBE, ONE_NODE).predictions
    }
    assert ("pipeline", 4) in rows and ("model_parallel", 4) in rows
    assert ("pipeline", 8) not in rows and ("model_parallel", 8) not in rows, "6 blocks: no 8-stage cut"
    assert ("ddp", 8) in rows
    assert rows["pipeline", 4].link.startswith("pipeline stages, activations over measured: gloo")
    no_cut = {
        (row.strategy, row.devices): row
        for row in predict(summarize_cells(entries()), options, "strong", PROBE, ONE_NODE).predictions
    }
    assert rows["pipeline", 4].speedup < no_cut["pipeline", 4].speedup, "the transfers cost time"
    assert "no transfers modelled" in no_cut["pipeline", 4].link


def test_a_cut_at_more_devices_balances_the_measured_blocks_by_time_and_sends_what_each_boundary_block_leaves():
    """Blocks of 4, 1, 1, 1 and 1 ms: 2 stages split them 4 | 4; 3 stages cannot do better than the first block
    alone (the DP cuts 4 | 1 | 3), so the first stage sets the pace (half the work, not a third), and each boundary
    sends what its last block leaves."""
    staged = CutDetails(block_seconds=[4.0, 1.0, 1.0, 1.0, 1.0], block_output_bytes_per_unit=[10.0, 20.0, 30.0, 40.0])
    assert cut_at(2, staged, 8) == ([0.5, 0.5], [80.0])
    assert cut_at(3, staged, 8) == ([0.5, 0.125, 0.375], [80.0, 160.0])
    assert cut_at(3, CutDetails(), 8) == ([1 / 3] * 3, []), "no cut ran here: equal stages, nothing sent"


def test_unequal_blocks_predict_a_slower_pipeline_than_equal_ones():
    benchmark = summarize_cells(entries())
    options = OPTIONS.model_copy(update={"devices": [3]})

    def pipeline_speedup(block_seconds: list[float]) -> float:
        staged = {"cut": [3, 3], "stage_seconds": [0.03, 0.05], "micro_batches": 4, "block_seconds": block_seconds}
        staged["block_output_bytes_per_unit"] = [0.0] * 5
        cells = dict(benchmark.cells)
        cells["model_parallel"] = cells["model_parallel"].model_copy(update={"strategy_details": staged})
        rows = predict(benchmark.model_copy(update={"cells": cells}), options, "strong", PROBE, ONE_NODE).predictions
        return next(row.speedup for row in rows if row.strategy == "pipeline")

    assert pipeline_speedup([0.04, 0.01, 0.01, 0.01, 0.01, 0.01]) < pipeline_speedup([0.015] * 6)


def test_zero_is_checked_at_its_cell_as_ddp_plus_its_shards_broadcast_less_half_the_optimizer():
    """zero's cell is checked by its own cost model, no line of the prediction naming it: ddp's step over the same
    ceiling, plus each of the 2 ranks broadcasting its half of the parameters (one latency and half the bytes each),
    less half of the ceiling's optimizer step (each rank steps half the parameters); and it is extended to
    predict.devices like every predicted strategy."""
    two = cpu_setup(devices=2, batch_shape=(64, 1, 28, 28))
    sharded = CellRuns(
        Cell("fashion_mnist", "zero"),
        tiny_plan("zero", two, "benchmark", batch_size=64),
        run=cell_run([turn([0.12] * 5, 2), turn([0.12] * 3, 2)], allreduce_s=0.02),
    )
    benchmark = summarize_cells([*entries(), sharded])
    prediction = predict(benchmark, OPTIONS, "strong", PROBE, ONE_NODE)
    checks = {check.cell: check for check in prediction.checks}
    parameters = benchmark.cells["single"].parameters * 4
    ceiling = benchmark.cells["ceiling"]
    broadcasts = 2 * (1e-4 + parameters / 2 * 1e-9)
    saved = ceiling.time_split_s["optimizer"] / 2
    assert saved > 0
    assert checks["zero"].predicted_step_s == pytest.approx(checks["ddp"].predicted_step_s + broadcasts - saved)
    assert checks["zero"].measured_step_s == benchmark.cells["zero"].step_time_s.median
    assert {row.devices for row in prediction.predictions if row.strategy == "zero"} == {4, 64}
    split = benchmark.cells["zero"]
    assert split.time_split_s["communication"] > 0 and split.communication_hidden_share is not None, (
        "its time split: the gradients' all-reduce, against the full all-reduce its run timed"
    )
