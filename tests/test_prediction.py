"""The prediction's arithmetic: textbook ring times from a known alpha-beta, bus bandwidth as nccl-tests defines it,
a fit that recovers the link it was drawn from, GPipe's (m + S - 1) x stage, and what ddp's overlap may hide."""

import pytest

from parabench.prediction.collectives import Link, Links, bus_bandwidth, collective_seconds, fit_link, unknown_links
from parabench.strategies.cost import StepPrediction, data_parallel_step, pipeline_step
from parabench.strategies.dp import replicated_step
from parabench.strategies.fsdp import fsdp_step

LINK = Link(latency_s=10e-6, seconds_per_byte=1 / 10e9)  # 10 us a step, 10 GB/s


def test_a_ring_all_reduce_takes_2_n_minus_1_steps_and_moves_2_n_minus_1_over_n_of_the_buffer():
    size, ranks = 1e9, 4
    assert collective_seconds(LINK, "all_reduce", size, ranks) == pytest.approx(6 * 10e-6 + 1.5 * 0.1)
    assert collective_seconds(LINK, "all_gather", size, ranks) == pytest.approx(3 * 10e-6 + 0.75 * 0.1)
    assert collective_seconds(LINK, "reduce_scatter", size, ranks) == pytest.approx(3 * 10e-6 + 0.75 * 0.1)
    assert collective_seconds(LINK, "send_recv", size, ranks) == pytest.approx(10e-6 + 0.1)
    assert collective_seconds(LINK, "all_reduce", size, 1) == 0.0, "one rank has nothing to reduce with"


def test_bus_bandwidth_is_nccl_tests_algbw_times_the_ring_factor():
    algbw, busbw = bus_bandwidth("all_reduce", 1e9, 0.5, 8)
    assert algbw == pytest.approx(2e9) and busbw == pytest.approx(2e9 * 2 * 7 / 8)
    assert bus_bandwidth("all_gather", 1e9, 0.5, 8)[1] == pytest.approx(2e9 * 7 / 8)
    assert bus_bandwidth("send_recv", 1e9, 0.5, 2)[1] == pytest.approx(2e9)


def test_the_fit_recovers_the_link_its_times_were_drawn_from():
    sizes = [4.0 * 8**k for k in range(9)]
    for collective in ("all_reduce", "all_gather", "send_recv"):
        seconds = [collective_seconds(LINK, collective, size, 4) for size in sizes]
        fitted = fit_link(collective, 4, sizes, seconds)
        assert fitted.latency_s == pytest.approx(LINK.latency_s, rel=1e-6)
        assert fitted.bandwidth_bytes_per_s == pytest.approx(10e9, rel=1e-6)


def test_gpipe_of_equal_stages_takes_m_plus_s_minus_1_stage_times():
    step = pipeline_step([0.1] * 4, micro_batches=8)
    assert step.step_s == pytest.approx((8 + 4 - 1) * 0.1)
    assert step.exposed_communication_s == pytest.approx(3 * 0.1), "the bubble: (S - 1) x stage"
    uneven = pipeline_step([0.1, 0.3], micro_batches=4)
    assert uneven.step_s == pytest.approx(4 * 0.3 + 0.1), "m x slowest + the rest"


def test_a_boundary_s_transfers_run_between_its_stages_exposed_and_bound_the_step_where_longest():
    step = pipeline_step([0.1, 0.3], micro_batches=4, transfer_seconds=[0.05])
    assert step.step_s == pytest.approx(4 * 0.3 + 0.1 + 0.05), "fill and drain cross the boundary once more"
    assert step.compute_s == pytest.approx(4 * 0.3), "the stages' work is the same"
    assert step.exposed_communication_s == pytest.approx(0.1 + 0.05)
    slow_link = pipeline_step([0.1, 0.3], micro_batches=4, transfer_seconds=[0.5])
    assert slow_link.step_s == pytest.approx(4 * 0.5 + 0.1 + 0.3), "a transfer longer than every stage sets the pace"
    one = pipeline_step([0.1, 0.3], micro_batches=1, transfer_seconds=[0.05])
    assert one.step_s == pytest.approx(0.45), "model_parallel: one stage, the transfers, the next, in turn"


def test_ddp_hides_what_the_backward_outlasts_but_never_its_last_bucket():
    gradients = 1e9  # 0.1 s of all-reduce over 2 ranks at 10 GB/s, in 40 buckets of 25 MB (2 x 10 us latency each)
    everything = collective_seconds(LINK, "all_reduce", gradients, 2) + 39 * 2 * LINK.latency_s
    buckets = [25e6] * 40
    exposed = data_parallel_step(1.0, 0.08, buckets, Links.alike(LINK), 2, hideable=1.0)
    assert exposed.exposed_communication_s == pytest.approx(everything - 0.08)
    hidden = data_parallel_step(1.0, 5.0, buckets, Links.alike(LINK), 2, hideable=1.0)
    assert hidden.exposed_communication_s == pytest.approx(collective_seconds(LINK, "all_reduce", 25e6, 2))
    small_last = data_parallel_step(1.0, 5.0, [*buckets[1:], 1e6], Links.alike(LINK), 2, hideable=1.0)
    assert small_last.exposed_communication_s == pytest.approx(collective_seconds(LINK, "all_reduce", 1e6, 2)), (
        "what is left is the last bucket's all-reduce: DDP's holds the model's first layers, often a small one"
    )
    plain = data_parallel_step(1.0, 5.0, buckets, Links.alike(LINK), 2, hideable=0.0)
    assert plain.step_s == pytest.approx(1.0 + everything), "allreduce: after the backward, all of it"


def test_on_a_shared_cpu_only_the_waits_of_the_early_buckets_hide_behind_the_backward():
    """hideable 0.25 (a rank keeps a core busy for 75% of an all-reduce): a quarter of every bucket but the last goes
    while the backward goes on, as far as the backward lasts."""
    buckets = [25e6] * 4
    each = collective_seconds(LINK, "all_reduce", 25e6, 2)
    shared = data_parallel_step(1.0, 5.0, buckets, Links.alike(LINK), 2, hideable=0.25)
    assert shared.exposed_communication_s == pytest.approx(4 * each - 0.25 * 3 * each)
    short = data_parallel_step(1.0, 1e-4, buckets, Links.alike(LINK), 2, hideable=0.25)
    assert short.exposed_communication_s == pytest.approx(4 * each - 1e-4), "no more than the backward lasts"


def test_ddp_broadcasts_its_buffers_before_the_forward_along_a_chain_exposed():
    """4 ranks, 1 MB of buffers at 10 GB/s over send/recv's link: 3 latencies and 0.1 ms, hidden behind nothing."""
    slow_messages = Link(latency_s=1e-3, seconds_per_byte=1 / 1e10)
    links = Links(LINK, LINK, LINK, send_recv=slow_messages)
    without = data_parallel_step(1.0, 5.0, [25e6], links, 4, hideable=1.0)
    step = data_parallel_step(1.0, 5.0, [25e6], links, 4, hideable=1.0, broadcast_bytes=1e6)
    assert step.exposed_communication_s - without.exposed_communication_s == pytest.approx(3 * 1e-3 + 1e-4)
    alone = data_parallel_step(1.0, 5.0, [25e6], links, 1, hideable=1.0, broadcast_bytes=1e6)
    assert alone.exposed_communication_s == 0.0, "one rank: nothing to broadcast or reduce"


def test_dp_broadcasts_the_parameters_and_reduces_the_gradients_through_its_first_device_exposed():
    step = replicated_step(1.0, 1e9, 0.0, Links.alike(LINK), 4)  # 1 GB: 0.1 s each way at 10 GB/s, 3 latencies each
    scatter_gather = 3 * 10e-6  # no batch: the three copies' latencies alone
    assert step.exposed_communication_s == pytest.approx(2 * (3 * 10e-6 + 0.1) + scatter_gather)
    assert step.compute_s == 1.0
    ring = data_parallel_step(1.0, 0.0, [1e9], Links.alike(LINK), 4, hideable=0.0)
    assert step.exposed_communication_s > ring.exposed_communication_s, "through one device: more than a ring"
    assert replicated_step(1.0, 1e9, 1e9, Links.alike(LINK), 1).step_s == 1.0, (
        "one device: nothing to replicate or scatter"
    )


def test_dp_scatters_the_inputs_and_gathers_the_outputs_through_its_first_device():
    """400 MB of inputs and outputs' bytes over 4 devices: the first keeps its quarter, 300 MB cross its link."""
    without = replicated_step(1.0, 1e6, 0.0, Links.alike(LINK), 4)
    step = replicated_step(1.0, 1e6, 4e8, Links.alike(LINK), 4)
    assert step.exposed_communication_s - without.exposed_communication_s == pytest.approx(0.03)


def full_sharding(
    compute_s: float, parameter_bytes: float, links: Links, ranks: int, gathers_per_step: int, units: int
) -> StepPrediction:
    """fsdp sharded over every one of `ranks`, one replica: every collective over `links`."""
    return fsdp_step(compute_s, parameter_bytes, links, links, 1, ranks, gathers_per_step, units)


def test_fsdp_gathers_the_parameters_twice_and_scatters_the_gradients():
    slow = Link(latency_s=10e-6, seconds_per_byte=1 / 1e9)
    step = full_sharding(1.0, 1e9, Links(LINK, LINK, slow), 4, gathers_per_step=2, units=0)
    gather = collective_seconds(LINK, "all_gather", 1e9, 4)
    scatter = collective_seconds(slow, "reduce_scatter", 1e9, 4)
    assert step.exposed_communication_s == pytest.approx(2 * gather + scatter), "each collective over its own fit"
    kept = full_sharding(1.0, 1e9, Links(LINK, LINK, slow, copy_bytes_per_s=1e9), 4, gathers_per_step=1, units=0)
    assert kept.exposed_communication_s == pytest.approx(gather + scatter), "grad_op gathers once a step"
    assert kept.compute_s == pytest.approx(1.0 + 2 * 1.25 * 1.0), "one gather's copies and the scatter's"


def test_an_unknown_link_is_named_with_the_choices():
    assert unknown_links("measured", "ethernet25") == []
    assert unknown_links({"bandwidth_gb_per_s": 64, "latency_us": 3}, "measured") == [], "numbers: the schema's"
    problems = unknown_links("nvlink9", "carrier_pigeon")
    assert problems[0].startswith("predict.interconnect: 'nvlink9'") and "nvlink4" in problems[0]
    assert problems[1].startswith("predict.network: 'carrier_pigeon'") and "infiniband400" in problems[1]


def test_each_bucket_pays_the_ring_s_latency_and_the_copies_into_it_and_back():
    gradients, bucket = 100e6, 25e6  # 4 buckets
    plain = data_parallel_step(1.0, 0.0, [gradients], Links.alike(LINK), 4, hideable=0.0)
    bucketed = data_parallel_step(1.0, 0.0, [bucket] * 4, Links.alike(LINK), 4, hideable=0.0)
    assert bucketed.exposed_communication_s - plain.exposed_communication_s == pytest.approx(3 * 6 * LINK.latency_s)
    copied = data_parallel_step(1.0, 0.0, [bucket] * 4, Links(LINK, LINK, LINK, 1e9), 4, hideable=0.0)
    assert copied.compute_s == pytest.approx(1.0 + 2 * 0.1), "into the bucket and back, 100 MB at 1 GB/s each"
    sharded = full_sharding(1.0, 1e8, Links(LINK, LINK, LINK, copy_bytes_per_s=1e9), 2, gathers_per_step=2, units=0)
    assert sharded.compute_s == pytest.approx(1.0 + 4.5 * 0.1), "shard in, parameters out, gradients in, shard out"


def test_each_sharded_block_adds_its_fixed_cost_as_the_probe_measured_it():
    """On 2 CPU ranks FSDP2 costs about 2 ms a block beyond its bytes: a 59,000-parameter model paid 60 ms a step."""
    links = Links(LINK, LINK, LINK, shard_unit_s=0.002)
    bare = full_sharding(1.0, 1e6, Links(LINK, LINK, LINK), 2, gathers_per_step=2, units=8)
    costed = full_sharding(1.0, 1e6, links, 2, gathers_per_step=2, units=8)
    assert costed.exposed_communication_s - bare.exposed_communication_s == pytest.approx(8 * 0.002)


def test_fsdp_with_every_rank_a_replica_all_reduces_each_block_and_pays_the_replicated_block_s_cost():
    """Sharding none (a mesh of 4 x 1): nothing to gather or scatter among shards of one, but the copies in and out
    of them (6 x the parameters' bytes); each of the 5 blocks all-reduces its gradients across the 4 replicas, one
    call each (the ring's 6 latencies a call), and pays the probe's cost of one more replicated block."""
    within = Links(LINK, LINK, LINK, copy_bytes_per_s=1e9, shard_unit_s=0.5)  # shards of one: no shard cost
    across = Links(LINK, LINK, LINK, replicate_unit_s=0.002)
    step = fsdp_step(1.0, 1e8, within, across, 4, 1, gathers_per_step=2, units=5)
    ring = collective_seconds(LINK, "all_reduce", 1e8, 4) + 4 * 6 * LINK.latency_s
    assert step.exposed_communication_s == pytest.approx(ring + 5 * 0.002)
    assert step.compute_s == pytest.approx(1.0 + 6 * 0.1), "gathered twice and scattered: in and out of each"


def test_hybrid_sharding_gathers_within_a_node_and_all_reduces_its_shard_across_the_nodes():
    """HSDP over 2 nodes of 4 (a mesh of 2 x 4): the all-gathers and the reduce-scatter over the 4 ranks of a node,
    each block's quarter of the gradients all-reduced between the 2 nodes over the slower link between them, and
    each block pays both fixed costs."""
    network = Link(latency_s=1e-3, seconds_per_byte=1 / 1e8)
    within = Links(LINK, LINK, LINK, shard_unit_s=0.003)
    across = Links(network, network, network, replicate_unit_s=0.002)
    step = fsdp_step(1.0, 1e8, within, across, 2, 4, gathers_per_step=2, units=3)
    inside = 2 * collective_seconds(LINK, "all_gather", 1e8, 4) + collective_seconds(LINK, "reduce_scatter", 1e8, 4)
    between = collective_seconds(network, "all_reduce", 1e8 / 4, 2) + 2 * 2 * network.latency_s
    assert step.exposed_communication_s == pytest.approx(inside + between + 3 * (0.003 + 0.002))
    one_replica = fsdp_step(1.0, 1e8, within, across, 1, 8, gathers_per_step=2, units=3)
    assert one_replica == full_sharding(1.0, 1e8, within, 8, gathers_per_step=2, units=3), "nothing crosses across"
