"""The collective probe on 2 real gloo ranks under torchrun: every collective timed at every size, its link fitted;
one device writes why there is nothing to time; and between two nodes on loopback, one rank on each, the second
joining as another node would."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

from parabench.engine.probe import probe_links, probe_network, probe_sizes, timed
from parabench.prediction.collectives import COLLECTIVES
from parabench.runtime.process import Process
from tests.conftest import PROJECT_ROOT, python_path
from tests.multiprocess import free_port, run_ranks
from tests.setups import cpu_setup


def test_sizes_grow_by_eight_up_to_the_largest_and_end_at_it():
    assert probe_sizes(4096) == [4, 32, 256, 2048, 4096], "the largest itself, where the powers of 8 miss it"
    assert probe_sizes(2048) == [4, 32, 256, 2048]
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
    assert 0 <= probe["replicate_unit_s"] < 1, "what replicating one more block under FSDP costs, its bytes aside"
    big = probe["collectives"]["all_reduce"]["points"][-1]
    assert big["busbw_bytes_per_s"] == pytest.approx(big["algbw_bytes_per_s"] * 2 * (2 - 1) / 2)
    for measured in probe["collectives"].values():
        assert all(0 <= point["cpu_share"] <= 1 for point in measured["points"])
        assert measured["cpu_share"] == measured["points"][-1]["cpu_share"], "no size from 1 MiB up: the largest's"


def _busy_and_idle_shares(rank: int, world_size: int, out: Path) -> None:
    process = Process(rank=rank, local_rank=rank, world_size=world_size, device=torch.device("cpu"))

    def spin() -> None:
        ends = time.process_time() + 0.02
        while time.process_time() < ends:
            pass

    shares = {"sleep": timed(lambda: time.sleep(0.02), process)[1], "spin": timed(spin, process)[1]}
    if rank == 0:
        out.write_text(json.dumps(shares))


def test_the_probe_tells_a_call_that_waits_from_one_that_keeps_the_cpu_busy(tmp_path):
    """What the prediction hides behind backward on a shared CPU is a collective's waiting: the probe's cpu_share.
    A call that sleeps 20 ms keeps no CPU busy; one that computes for 20 ms of CPU time keeps one busy throughout,
    or, where other processes share the cores (the test suite's other worker and its ranks), as much of its time as
    it gets: at least a tenth here, even with ten processes wanting the two cores."""
    out = tmp_path / "shares.json"
    run_ranks(2, _busy_and_idle_shares, out)
    shares = json.loads(out.read_text())
    assert shares["sleep"] < 0.05 and shares["spin"] > 0.1, shares


def test_one_device_has_nothing_to_probe(tmp_path):
    out = tmp_path / "probe.json"
    probe_links(cpu_setup(devices=1).machine, 2048, out)
    probe = json.loads(out.read_text())
    assert probe["ranks"] == 1 and "one device" in probe["skipped"] and "collectives" not in probe


def test_one_node_has_no_network_to_probe(tmp_path):
    out = tmp_path / "probe_network.json"
    probe_network(cpu_setup(devices=2).machine, 2048, out)
    probe = json.loads(out.read_text())
    assert probe["ranks"] == 1 and "one node" in probe["skipped"] and "collectives" not in probe


def run_in(project: Path, *command: str) -> subprocess.Popen[str]:
    """A command of this project's code, run in `project` (a node's copy of the project)."""
    env = {**os.environ, "PYTHONPATH": python_path()}
    return subprocess.Popen(
        [sys.executable, *command], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


@pytest.mark.slow
def test_two_nodes_on_loopback_time_the_network_with_one_rank_on_each(tmp_path, base_params):
    """Node 0's probe stage (one device a node: nothing to time within it) waits at the rendezvous and names the
    command the other nodes run; node 1 runs it; node 0 writes every collective fitted between the two."""
    base_params["hardware"].update(
        devices=1, threads=1, nodes=2, join_timeout_s=60, rendezvous=f"127.0.0.1:{free_port()}"
    )
    base_params["predict"]["probe_max_bytes"] = 2048
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(base_params))
    node_0 = run_in(tmp_path, str(PROJECT_ROOT / "stages" / "probe.py"))
    node_1 = run_in(tmp_path, "-m", "parabench.engine.join_probe", "--node-rank", "1")
    (output_0, _), (output_1, _) = node_0.communicate(timeout=300), node_1.communicate(timeout=300)
    assert node_0.returncode == 0 and node_1.returncode == 0, f"node 0:\n{output_0}\nnode 1:\n{output_1}"
    assert "python -m parabench.engine.join_probe --node-rank K" in output_0
    within = json.loads((tmp_path / "results/probe.json").read_text())
    assert "one device" in within["skipped"]
    network = json.loads((tmp_path / "results/probe_network.json").read_text())
    assert (network["across"], network["ranks"], network["backend"]) == ("nodes", 2, "gloo")
    for collective in COLLECTIVES:
        assert network["collectives"][collective]["status"] == "ran", collective


def test_joining_the_network_probe_on_one_node_says_there_is_nothing_to_join(tmp_path, base_params):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(base_params))
    output, _ = run_in(tmp_path, "-m", "parabench.engine.join_probe", "--node-rank", "1").communicate(timeout=120)
    assert "hardware.nodes is 1 here" in output and "nothing to join" in output


@pytest.mark.slow
def test_a_node_that_never_joins_the_network_probe_is_named_after_the_join_timeout(tmp_path, base_params):
    base_params["hardware"].update(
        devices=1, threads=1, nodes=2, join_timeout_s=3, rendezvous=f"127.0.0.1:{free_port()}"
    )
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(base_params))
    output, _ = run_in(tmp_path, str(PROJECT_ROOT / "stages" / "probe.py")).communicate(timeout=120)
    assert "probe between nodes: only 1 of 2 nodes joined" in output and "join_probe" in output, output
    assert not (tmp_path / "results/probe_network.json").exists(), "nothing half-written for DVC to cache"
