"""torchrun jobs on loopback through the real train stage (ddp, 2 gloo ranks): two nodes joined by torchrun's
rendezvous (ddp, the distributed pipeline cut across them and fsdp's hybrid sharding, each checked by the predict
stage), and faults (a killed rank, a hung rank, a restarted worker group, a node that is late or holds other data);
each bounded in time, each named, and every run's parameters equal to an uninterrupted single-node one's."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from parabench.data.idx import write_idx
from parabench.engine.cells import read_cell_runs
from parabench.paths import results_file
from parabench.report.benchmark import write_benchmark
from parabench.runtime.failures import STOP_GRACE_S
from parabench.strategies.cost import pipeline_step
from tests.conftest import PROJECT_ROOT, python_path
from tests.multiprocess import free_port
from tests.test_pipeline_e2e import TINY_EPISODES, TINY_HOTDOG, TINY_RESNET50, TINY_SCALE, TINY_SWEEP

pytestmark = pytest.mark.slow
EPOCHS = 2  # the faults strike in epoch 2, after epoch 1's checkpoint
TIMEOUT_S = 10  # the hung-rank test's hardware.timeout_s; the others keep 60 s, room for workers to start
MODEL = Path("models/train/fashion_mnist.pt")
CHECKPOINT = Path("checkpoints/train/fashion_mnist.pt")
PREPARED = Path("data/prepared/fashion_mnist")


def write_idx_folder(folder: Path) -> None:
    """Fashion-MNIST-shaped idx files: 2,048 training images (64 steps of 32 per epoch, about a second: time to
    strike during epoch 2), 64 test."""
    generator = np.random.default_rng(0)
    folder.mkdir(parents=True)
    for prefix, count in (("train", 2048), ("t10k", 64)):
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", generator.integers(0, 256, (count, 28, 28), np.uint8))
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", generator.integers(0, 10, count, dtype=np.uint8))


def stage(project: Path, *args: str, tag: str = "", as_dvc: str | None = None) -> subprocess.Popen[str]:
    """A stage script run in `project`; `as_dvc` names the stage as DVC does ($DVC_STAGE) and starts it in a session
    of its own, as a terminal's foreground job, so that a test can press Ctrl-C (SIGINT to the group)."""
    env = {**os.environ, "PYTHONPATH": python_path(), "PARABENCH_TEST_TAG": tag}
    env.pop("PARABENCH_DATA_MIRROR", None)
    if as_dvc is not None:
        env["DVC_STAGE"] = as_dvc
    return subprocess.Popen(
        [sys.executable, str(PROJECT_ROOT / "stages" / args[0]), *args[1:]],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=terminal_job if as_dvc is not None else None,
    )


def terminal_job() -> None:
    """In the child: a session of its own, as a shell's foreground job, with SIGINT's default action (pytest-xdist's
    workers ignore SIGINT, and a child inherits that)."""
    os.setsid()
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def join(project: Path, node_rank: int, module: str = "parabench.engine.join") -> subprocess.Popen[str]:
    """The other node's command (`module`: the training's join, or the probe's), run in `project` (its copy of the
    project)."""
    env = {**os.environ, "PYTHONPATH": python_path()}
    workload = ["fashion_mnist"] if module == "parabench.engine.join" else []
    return subprocess.Popen(
        [sys.executable, "-m", module, *workload, "--node-rank", str(node_rank)],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finished(process: subprocess.Popen[str], limit_s: float = 300) -> tuple[int, str]:
    output, _ = process.communicate(timeout=limit_s)
    return process.returncode, output


def make_project(
    folder: Path,
    max_restarts: int = 0,
    timeout_s: float = 60,
    prepared: Path | None = None,
    nodes: int = 1,
    join_timeout_s: float = 60,
    strategy: str = "ddp",
    engine: str = "inprocess",
    sharding: str = "full",
) -> Path:
    """A working folder with params.yaml at a tiny scale (`strategy` on 2 CPU processes, the pipeline's `engine`, fsdp's
    `sharding`;
    SGD with momentum, so that a resumed run needs its optimiser's state) and Fashion-MNIST prepared (by its own
    download and prepare stages, or copied from `prepared`)."""
    folder.mkdir()
    params = yaml.safe_load((PROJECT_ROOT / "params.yaml").read_text())
    params["scales"]["fashion_mnist"]["tiny"] = {**TINY_SCALE, "epochs": EPOCHS, "width": 8, "momentum": 0.9}
    params["scales"]["miniimagenet"]["tiny"] = TINY_EPISODES
    params["scales"]["hotdog"]["tiny"] = TINY_HOTDOG
    params["scales"]["resnet50"]["tiny"] = TINY_RESNET50
    params["pipeline"]["split_size"].update(fashion_mnist=8, resnet50=2)  # fashion_mnist: 4 micro-batches of 32
    for sweep in params["sweeps"].values():
        sweep.update(TINY_SWEEP, values={"tiny": [2]})
    params.update(scale="tiny", strategy=strategy)
    params["pipeline"]["engine"] = engine
    params["fsdp"]["sharding"] = sharding
    params["hardware"].update(
        accelerator="cpu",
        devices=2 // nodes,
        threads=1,
        max_restarts=max_restarts,
        timeout_s=timeout_s,
        nodes=nodes,
        join_timeout_s=join_timeout_s,
        rendezvous=f"127.0.0.1:{free_port()}" if nodes > 1 else None,
    )
    params["data"]["fashion_mnist"]["source"] = str(folder / "idx")
    (folder / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    write_idx_folder(folder / "idx")
    if prepared is not None:
        shutil.copytree(prepared, folder / PREPARED)
        return folder
    for name in ("download.py", "prepare.py"):
        status, output = finished(stage(folder, name, "fashion_mnist"))
        assert status == 0, output
    return folder


def worker_pid(tag: str, rank: int) -> int | None:
    """The worker process of rank `rank` started under our tag, if it is running."""
    for entry in Path("/proc").iterdir():
        try:
            environ = dict(item.split("=", 1) for item in (entry / "environ").read_text().split("\0") if "=" in item)
        except (OSError, ValueError):
            continue
        if (
            environ.get("PARABENCH_TEST_TAG") == tag
            and environ.get("RANK") == str(rank)
            and "parabench.engine.worker" in (entry / "cmdline").read_text()
        ):
            return int(entry.name)
    return None


def hit_rank_after_first_epoch(project: Path, tag: str, signal_number: int) -> float:
    """Wait for epoch 1's checkpoint, then send the signal to rank 1; return when it was sent."""
    deadline = time.monotonic() + 120
    while not (project / CHECKPOINT).exists():
        assert time.monotonic() < deadline, "no checkpoint within 2 minutes"
        time.sleep(0.02)
    pid = worker_pid(tag, rank=1)
    assert pid is not None, "rank 1 is running"
    os.kill(pid, signal_number)
    return time.monotonic()


def parameters(project: Path) -> dict[str, torch.Tensor]:
    return torch.load(project / MODEL, map_location="cpu", weights_only=True)


def assert_same_parameters(resumed: dict[str, torch.Tensor], straight: dict[str, torch.Tensor]) -> None:
    assert resumed.keys() == straight.keys()
    for name, value in straight.items():
        torch.testing.assert_close(resumed[name], value, rtol=1e-5, atol=1e-6, msg=name)


@pytest.fixture
def tag() -> Iterator[str]:
    """A mark in the environment of the workers a test starts; any still running at its end are killed."""
    mark = uuid.uuid4().hex
    yield mark
    for rank in (0, 1):
        while (pid := worker_pid(mark, rank)) is not None:
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)


@pytest.fixture(scope="module")
def straight_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project trained without a fault; its prepared data serves the other tests."""
    project = make_project(tmp_path_factory.mktemp("faults") / "straight")
    status, output = finished(stage(project, "train.py", "fashion_mnist"))
    assert status == 0, output
    return project


@pytest.fixture
def uninterrupted(straight_project: Path) -> dict[str, torch.Tensor]:
    """The parameters of the ddp run without a fault."""
    return parameters(straight_project)


@pytest.fixture
def prepared(straight_project: Path) -> Path:
    return straight_project / PREPARED


def test_a_killed_rank_ends_the_job_named_and_the_rerun_resumes_to_the_same_parameters(
    tmp_path, tag, uninterrupted, prepared
):
    """ddp; fsdp's sharded checkpoint resumes alike (tests/test_training_loop.py, 2 gloo ranks without torchrun)."""
    project = make_project(tmp_path / "killed", prepared=prepared)
    run = stage(project, "train.py", "fashion_mnist", tag=tag)
    killed_at = hit_rank_after_first_epoch(project, tag, signal.SIGKILL)
    status, output = finished(run)
    ended_after_s = time.monotonic() - killed_at
    print(f"killed rank: the job ended {ended_after_s:.1f} s after SIGKILL")
    assert status != 0 and ended_after_s < 10, f"ended {ended_after_s:.1f} s after the kill:\n{output}"
    message = output[output.rindex("error: the worker(s)") :]
    assert "rank 1 (local rank 1) on host" in message and "was killed by SIGKILL first" in message, message
    assert re.search(rf"the last step rank 0 finished: epoch [12] of {EPOCHS}, step \d+ of 64", message), message
    assert not (project / MODEL).exists() and not (project / "results").exists(), "nothing half-written"
    status, output = finished(stage(project, "train.py", "fashion_mnist"))
    assert status == 0 and "resuming from" in output and ".corrupt" not in output, output
    record = json.loads((project / "results/train/fashion_mnist.json").read_text())
    assert record["resumed_after_epoch"] == 1 and record["restarts"] == 0
    assert_same_parameters(parameters(project), uninterrupted)


@pytest.mark.parametrize("strategy", ["ddp", "single"])
def test_ctrl_c_in_epoch_2_is_one_line_naming_the_stage_and_its_last_checkpoint(tmp_path, tag, prepared, strategy):
    """Ctrl-C reaches every process of the terminal's job: the stage, torchrun and (ddp) the workers through it; one
    process trains right in the stage (single). Either way one line, no traceback, nothing half-written left."""
    project = make_project(tmp_path / strategy, prepared=prepared, strategy=strategy)
    run = stage(project, "train.py", "fashion_mnist", tag=tag, as_dvc="train@fashion_mnist")
    deadline = time.monotonic() + 120
    while not (project / CHECKPOINT).exists():
        assert time.monotonic() < deadline, "no checkpoint within 2 minutes"
        time.sleep(0.02)
    time.sleep(0.3)  # into epoch 2 (about a second long)
    os.killpg(run.pid, signal.SIGINT)
    status, output = finished(run, limit_s=60)
    assert status == 130 and "Traceback" not in output and "SignalException" not in output, output
    said = [line for line in output.splitlines() if line.startswith(("interrupted", "error"))]
    assert len(said) == 1 and said[0].startswith("interrupted: stage train@fashion_mnist "), output
    assert re.search(rf"(after|during) epoch [12] of {EPOCHS}\b.*\(the last checkpoint holds epoch 1\)", said[0])
    assert not (project / MODEL).exists() and (project / CHECKPOINT).exists()
    assert worker_pid(tag, rank=0) is None and worker_pid(tag, rank=1) is None


def test_a_full_disk_at_the_checkpoint_names_the_folder_and_the_bytes_and_keeps_what_was_there(tmp_path, tag, prepared):
    """A 1 MB filesystem over checkpoints/train (a mount: root only). rank 0 cannot save epoch 1's checkpoint; the
    stage's last word is that, naming the folder, the bytes needed and free; rank 1's lost connection follows it."""
    project = make_project(tmp_path / "full", prepared=prepared)
    folder = project / CHECKPOINT.parent
    folder.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"a 1 MB filesystem could not be mounted here (root only): {mounted.stderr.decode().strip()}")
    try:
        status, output = finished(stage(project, "train.py", "fashion_mnist", tag=tag), limit_s=120)
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)  # detached even if a process lingers
    assert status == 2 and "Traceback" not in output, output
    message = output[output.rindex("error: train@fashion_mnist failed on rank 0") :]
    assert "the checkpoint of epoch 1 was not saved" in message and "no space left on the device" in message
    assert re.search(rf"{CHECKPOINT} needs [\d,]+ bytes, and {CHECKPOINT.parent} has [\d,]+ bytes free", message), (
        message
    )
    assert "then rank 1: stopped at epoch " in message and "lost the connection to another rank" in message
    assert not (project / MODEL).exists() and not (project / "results").exists()


def test_torchrun_restarts_the_group_which_resumes_within_the_same_run(tmp_path, tag, uninterrupted, prepared):
    project = make_project(tmp_path / "restarted", max_restarts=1, prepared=prepared)
    run = stage(project, "train.py", "fashion_mnist", tag=tag)
    hit_rank_after_first_epoch(project, tag, signal.SIGKILL)
    status, output = finished(run)
    assert status == 0, output
    record = json.loads((project / "results/train/fashion_mnist.json").read_text())
    assert record["restarts"] == 1 and record["resumed_after_epoch"] == 1, "the metrics say a restart happened"
    assert_same_parameters(parameters(project), uninterrupted)


def test_a_hung_rank_is_caught_by_the_timeout_and_named(tmp_path, tag, prepared):
    project = make_project(tmp_path / "hung", timeout_s=TIMEOUT_S, prepared=prepared)
    run = stage(project, "train.py", "fashion_mnist", tag=tag)
    stopped_at = hit_rank_after_first_epoch(project, tag, signal.SIGSTOP)
    status, output = finished(run, limit_s=120)
    ended_after_s = time.monotonic() - stopped_at
    message = output[output.rindex("error: the worker(s)") :]
    assert status != 0 and "rank 0: stopped at epoch 2 step" in message, output  # rank 0 lived to say it
    assert "rank 1 still ran 5 s later (hung or stopped" in message, message
    print(f"hung rank: the job ended {ended_after_s:.1f} s after SIGSTOP (timeout_s {TIMEOUT_S})")
    assert ended_after_s < TIMEOUT_S + STOP_GRACE_S + 10, "the collective's timeout, then the stop grace, not 30 s"
    assert worker_pid(tag, rank=1) is None, "the stopped rank was killed, not left behind"


def train_on_two_nodes(project: Path) -> dict[str, Any]:
    """Node 0's train stage and node 1's join, both in `project`; the run's results once both succeeded."""
    node_0 = stage(project, "train.py", "fashion_mnist")
    node_1 = join(project, node_rank=1)
    (status_0, output_0), (status_1, output_1) = finished(node_0), finished(node_1)
    assert status_0 == 0 and status_1 == 0, f"node 0:\n{output_0}\nnode 1:\n{output_1}"
    assert "python -m parabench.engine.join fashion_mnist --role train --node-rank K" in output_0
    return json.loads((project / "results/train/fashion_mnist.json").read_text())


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory, straight_project: Path) -> tuple[Path, dict[str, Any]]:
    """A project trained by ddp over two nodes on loopback, one process on each (one thread each), and its record."""
    project = make_project(
        tmp_path_factory.mktemp("two-nodes") / "project", prepared=straight_project / PREPARED, nodes=2
    )
    return project, train_on_two_nodes(project)


def test_two_nodes_on_loopback_train_to_the_parameters_of_one_node_with_two_processes(two_nodes, uninterrupted):
    project, record = two_nodes
    assert (record["environment"]["nodes"], record["processes"], record["replicas"]) == (2, 2, 2)
    assert record["environment"]["node_hosts"] == [socket.gethostname()] * 2
    assert_same_parameters(parameters(project), uninterrupted)


@pytest.fixture(scope="module")
def node_0_measured(two_nodes: tuple[Path, dict[str, Any]]) -> Path:
    """In the ddp project: the probe between the nodes (node 1 joining it), then the benchmark's single on node 0
    alone, summarised as speedup@ writes it (without evaluation and reference). What the predict stage reads beside a
    train run; the other two-node runs below take these files as theirs (the same workload, scale and machine)."""
    project, _ = two_nodes
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["benchmark"].update(strategies=["single"], min_turns=4, max_turns=4, warmup_steps=2, turn_steps=1)
    params["predict"]["probe_max_bytes"] = 4096
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    node_0, node_1 = stage(project, "probe.py"), join(project, node_rank=1, module="parabench.engine.join_probe")
    (status_0, output_0), (status_1, output_1) = finished(node_0), finished(node_1)
    assert status_0 == 0 and status_1 == 0, f"node 0:\n{output_0}\nnode 1:\n{output_1}"
    status, output = finished(stage(project, "benchmark.py", "fashion_mnist"))
    assert status == 0, output
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        write_benchmark("fashion_mnist", read_cell_runs(results_file("benchmark_cells", "fashion_mnist")), {}, 0.05)
    return project


NODE_0_RESULTS = ("results/probe.json", "results/probe_network.json", "results/benchmark/fashion_mnist.json")
ALONE = "single's compute, alone there: no ceiling of 2 copies ran"  # one device a node: the benchmark has none


def predicted_across(project: Path, measured: Path, label: str) -> dict[str, Any]:
    """The predict stage in `project` (its train run over two nodes, one process each), on node 0's probe and
    benchmark from `measured`; the check it wrote for the train run, labelled `label`, against the run's median step.
    How near the prediction comes is printed (docs/prediction.md), not asserted: a timed test would be a coin toss."""
    if project != measured:
        for name in NODE_0_RESULTS:
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(measured / name, project / name)
    status, output = finished(stage(project, "predict.py", "fashion_mnist"))
    assert status == 0, output
    prediction = json.loads((project / "results/prediction/fashion_mnist.json").read_text())
    checks = {check["cell"]: check for check in prediction["checks"]}
    assert label in checks, sorted(checks)
    check: dict[str, Any] = checks[label]
    record = json.loads((project / "results/train/fashion_mnist.json").read_text())
    assert check["measured_step_s"] == record["step_time_s"]["median"] and check["devices"] == 2
    assert check["error"] == pytest.approx(check["predicted_step_s"] / check["measured_step_s"] - 1)
    predicted, measured_s = check["predicted_step_s"], check["measured_step_s"]
    print(f"{label}: predicted {predicted:.4f} s, measured {measured_s:.4f} s ({check['error']:+.0%})")
    return check


def network_fit(measured: Path, collective: str) -> dict[str, Any]:
    """The probe between the nodes: its fit to `collective`."""
    fits: dict[str, Any] = json.loads((measured / "results/probe_network.json").read_text())["collectives"]
    return fits[collective]


def test_two_nodes_on_loopback_check_the_prediction_across_them_against_the_train_run(two_nodes, node_0_measured):
    """The ddp train run over both nodes, checked against single's compute at half its batch and the ring all-reduce
    of the model's gradients over the probe between them. Both nodes are this host, and with one device a node the
    benchmark ran no ceiling of two copies: the row says both."""
    project, _ = two_nodes
    across = predicted_across(project, node_0_measured, f"ddp across 2 nodes on one host (the train run; {ALONE})")
    all_reduce = network_fit(node_0_measured, "all_reduce")
    assert 0 < all_reduce["latency_s"] < across["predicted_exposed_communication_s"] < across["predicted_step_s"]


def test_the_distributed_pipeline_over_two_nodes_runs_one_stage_per_process_and_is_checked(
    tmp_path, prepared, node_0_measured
):
    """One process per node, one stage per process: the model is cut in two across the nodes (global rank = stage).
    The predict stage checks the run from its stages' own seconds, its one boundary crossing the network."""
    project = make_project(
        tmp_path / "two-node-pipeline", prepared=prepared, nodes=2, strategy="pipeline", engine="distributed"
    )
    record = train_on_two_nodes(project)
    assert (record["environment"]["nodes"], record["processes"], record["devices"]) == (2, 2, 2)
    details = record["strategy_details"]
    assert (details["engine"], details["stages"], len(details["cut"])) == ("distributed", 2, 2)
    assert details["micro_batches"] == 4 and len(details["boundary_bytes"]) == 1
    assert 0 <= record["final_epoch"]["test_acc"] <= 1 and len(parameters(project)) > 0
    across = predicted_across(project, node_0_measured, "pipeline across 2 nodes on one host (the train run)")
    send_recv = network_fit(node_0_measured, "send_recv")
    transfer = 2 * (send_recv["latency_s"] + details["boundary_bytes"][0] / send_recv["bandwidth_bytes_per_s"])
    schedule = pipeline_step(details["stage_seconds"], details["micro_batches"], [transfer])
    assert across["predicted_exposed_communication_s"] == pytest.approx(schedule.exposed_communication_s), (
        "the bubble, and the boundary's activation and gradient over the network in the fill and the drain"
    )


def test_fsdp_hybrid_over_two_nodes_replicates_across_them_and_trains_to_ddp_s_parameters(
    tmp_path, uninterrupted, prepared, node_0_measured
):
    """HSDP over (2 nodes, 1 device each): a shard within a node of one device is the whole model, so each node holds
    a replica and the gradients are averaged across the nodes, as ddp's on one node with two processes are. The
    predict stage checks it: each block's gradients all-reduced across the nodes over the probe between them."""
    project = make_project(tmp_path / "hybrid", prepared=prepared, nodes=2, strategy="fsdp", sharding="hybrid")
    record = train_on_two_nodes(project)
    details = record["strategy_details"]
    assert (details["sharding"], details["mesh"], record["environment"]["nodes"]) == ("hybrid", [2, 1], 2), (
        "(replicas across the nodes, shards within one): full sharding over both ranks would train alike"
    )
    assert_same_parameters(parameters(project), uninterrupted)
    label = f"fsdp hybrid across 2 nodes on one host (the train run; {ALONE})"
    across = predicted_across(project, node_0_measured, label)
    latencies = details["sharded_blocks"] * 2 * network_fit(node_0_measured, "all_reduce")["latency_s"]
    assert latencies <= across["predicted_exposed_communication_s"], "an all-reduce a block, two latencies each"


def test_a_node_that_does_not_come_is_named_after_the_join_timeout(tmp_path, prepared):
    project = make_project(tmp_path / "alone", prepared=prepared, nodes=2, join_timeout_s=3)
    started = time.monotonic()
    status, output = finished(stage(project, "train.py", "fashion_mnist"), limit_s=120)
    assert status != 0 and time.monotonic() - started < 60, output
    message = output[output.rindex("error: ") :]
    assert "only 1 of 2 nodes joined" in message and "hardware.join_timeout_s" in message, message
    assert "python -m parabench.engine.join" in message


def test_a_node_with_other_data_refuses_to_train(tmp_path, prepared):
    project = make_project(tmp_path / "node-0", prepared=prepared, nodes=2)
    other = tmp_path / "node-1"
    shutil.copytree(project, other)
    labels = other / PREPARED / "train_labels.npy"
    labels.write_bytes(labels.read_bytes()[:-1] + bytes([labels.read_bytes()[-1] ^ 1]))  # one label changed
    node_0 = stage(project, "train.py", "fashion_mnist")
    node_1 = join(other, node_rank=1)
    (status_0, output_0), (status_1, _) = finished(node_0), finished(node_1)
    assert status_0 != 0 and status_1 != 0
    assert "node 1 on " in output_0 and "holds other prepared data than node 0" in output_0, output_0
    assert not (project / MODEL).exists(), "nothing trained"
