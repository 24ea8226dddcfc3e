"""The collective probe on 2 real gloo ranks under torchrun: every collective timed at every size, its link fitted;
one device writes why there is nothing to time."""

import json

import pytest

from parabench.engine.probe import probe_links, probe_sizes
from parabench.prediction import COLLECTIVES
from tests.setups import cpu_setup


def test_sizes_grow_by_eight_up_to_the_largest():
    assert probe_sizes(4096) == [4, 32, 256, 2048]
    assert probe_sizes(4) == [4]


@pytest.mark.slow
def test_two_gloo_ranks_time_every_collective_and_fit_its_link(tmp_path):
    out = tmp_path / "probe.json"
    probe_links(cpu_setup(devices=2).machine, 2048, out)
    probe = json.loads(out.read_text())
    assert (probe["ranks"], probe["backend"], probe["device"]) == (2, "gloo", "cpu")
    assert probe["environment"]["cpu_model"]
    for collective in COLLECTIVES:
        measured = probe["collectives"][collective]
        assert measured["status"] == "ran", (collective, measured)
        assert [point["bytes"] for point in measured["points"]] == [4, 32, 256, 2048]
        assert all(point["seconds"] > 0 for point in measured["points"])
        assert measured["latency_s"] >= 0 and measured["bandwidth_bytes_per_s"] > 0
    assert probe["copy_bytes_per_s"] > 0, "the copy within a device's memory, for the buckets' flattening"
    assert 0 <= probe["shard_unit_s"] < 1, "what sharding one more block costs, its bytes aside"
    big = probe["collectives"]["all_reduce"]["points"][-1]
    assert big["busbw_bytes_per_s"] == pytest.approx(big["algbw_bytes_per_s"] * 2 * (2 - 1) / 2)


def test_one_device_has_nothing_to_probe(tmp_path):
    out = tmp_path / "probe.json"
    probe_links(cpu_setup(devices=1).machine, 2048, out)
    probe = json.loads(out.read_text())
    assert probe["ranks"] == 1 and "one device" in probe["skipped"] and "collectives" not in probe
