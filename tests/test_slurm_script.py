"""examples/slurm/train.sbatch under bash with stand-ins for srun and scontrol: its checks, params edit and a run."""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.conftest import PROJECT_ROOT, python_path
from tests.multiprocess import free_port
from tests.test_pipeline_e2e import make_project as make_dvc_project

SCRIPT = PROJECT_ROOT / "examples/slurm/train.sbatch"
JOB_ID = "4242"
MULTI_NODE_KEYS = ["accelerator", "devices", "nodes", "rendezvous"]  # the hardware lines the script rewrites
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}
SRUN = '''#!{python}
"""Stand-in srun: runs its command once per node, all at once (SLURM_NODEID 0 to SLURM_JOB_NUM_NODES - 1), node N's
output in $SRUN_LOGS/node-N.log; ends the others when one fails (--kill-on-bad-exit=1). $SRUN_LOGS/srun.json then
holds its options, the nodes' exit statuses and the digest of every params.yaml it saw while they ran."""
import hashlib, json, os, signal, subprocess, sys, threading, time
from pathlib import Path

args, options = sys.argv[1:], []
while args and args[0].startswith("-"):
    options.append(args.pop(0))
logs, seen, running = Path(os.environ["SRUN_LOGS"]), set(), threading.Event()


def watch():
    running.set()
    while running.is_set():
        try:
            seen.add(hashlib.sha256(Path("params.yaml").read_bytes()).hexdigest())
        except FileNotFoundError:
            seen.add("no params.yaml")
        time.sleep(0.001)


watcher = threading.Thread(target=watch)
watcher.start()
running.wait()
nodes = []
for node in range(int(os.environ["SLURM_JOB_NUM_NODES"])):
    env = dict(os.environ, SLURM_NODEID=str(node), SLURM_PROCID=str(node), SLURM_LOCALID="0", SLURM_STEP_ID="0")
    with open(logs / f"node-{{node}}.log", "w") as log:
        nodes.append(subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
killed = False
while any(node.poll() is None for node in nodes):
    if not killed and "--kill-on-bad-exit=1" in options and any(node.poll() for node in nodes):
        killed = True
        for node in nodes:
            try:
                os.killpg(node.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    time.sleep(0.05)
running.clear()
watcher.join()
statuses = [node.returncode for node in nodes]
(logs / "srun.json").write_text(json.dumps({{"options": options, "statuses": statuses, "params_seen": sorted(seen)}}))
sys.exit(next((1 if status < 0 else status for status in statuses if status), 0))
'''
SCONTROL = """#!/usr/bin/env bash
# Stand-in scontrol: `scontrol show hostnames LIST` names node 0 by the loopback address.
[ "$1 $2" = "show hostnames" ] || exit 2
printf '127.0.0.1\\nnode-1\\n'
"""
FAILING_SCONTROL = """#!/usr/bin/env bash
echo "scontrol: error: Unable to contact slurm controller" >&2
exit 1
"""
RECORDING = """#!/usr/bin/env bash
# Stand-in {name}: notes its arguments, one call a line (newlines as spaces); fails (status 3) when $STANDIN_FAILS
# names it.
call="{name} $*"
echo "${{call//$'\\n'/ }}" >> "$SRUN_LOGS/calls.txt"
[ "${{STANDIN_FAILS:-}}" != {name} ] || exit 3
"""


def executable(path: Path, text: str) -> None:
    """Write a script and make it executable."""
    path.write_text(text)
    path.chmod(0o755)


def stand_ins(folder: Path, scontrol: str = SCONTROL, recording: tuple[str, ...] = ()) -> Path:
    """A folder for the front of PATH: scontrol, srun, and a stand-in that only notes its calls for each command
    named in `recording` (srun included: then no node runs)."""
    folder.mkdir()
    executable(folder / "scontrol", scontrol)
    executable(folder / "srun", SRUN.format(python=sys.executable))
    for name in recording:
        executable(folder / name, RECORDING.format(name=name))
    return folder


def activate_stand_in(project: Path, real: bool) -> None:
    """The project's .venv/bin/activate: with `real`, this interpreter's own activate when it runs in a virtual
    environment (sourced under the script's `set -u`; it puts the real dvc first on PATH), else one that does
    nothing (this interpreter's folder is on PATH, after the stand-ins)."""
    own = Path(sys.executable).parent / "activate"
    (project / ".venv/bin").mkdir(parents=True)
    (project / ".venv/bin/activate").write_text(f"source {own}\n" if real and own.exists() else ":\n")


def script_env(project: Path, bin_folder: Path, logs: Path, **settings: str | None) -> dict[str, str]:
    """The environment sbatch gives the script on node 0 (SLURM_CPUS_PER_TASK 1), the stand-ins first on PATH, no
    SLURM_ or PARABENCH_ variable of ours leaking in; `settings` add variables (None: leave it out)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("SLURM_", "SRUN_", "PARABENCH_"))}
    env.update(
        PATH=os.pathsep.join([str(bin_folder), str(Path(sys.executable).parent), env["PATH"]]),
        PYTHONPATH=python_path(project),
        DVC_NO_ANALYTICS="1",
        SRUN_LOGS=str(logs),
        SLURM_SUBMIT_DIR=str(project),
        SLURM_JOB_ID=JOB_ID,
        SLURM_JOB_NODELIST="node-[0-1]",
        SLURM_JOB_NUM_NODES="2",
        SLURM_NNODES="2",
        SLURM_CPUS_PER_TASK="1",
        **GIT_IDENTITY,
    )
    for key, value in settings.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_script(project: Path, env: dict[str, str], limit_s: float = 60) -> subprocess.CompletedProcess[str]:
    """`bash examples/slurm/train.sbatch`, started from another folder (the script goes to SLURM_SUBMIT_DIR)."""
    return subprocess.run(
        ["bash", str(SCRIPT)], cwd=project.parent, env=env, capture_output=True, text=True, timeout=limit_s
    )


def calls(logs: Path) -> list[str]:
    """The calls the recording stand-ins noted, in order."""
    path = logs / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def bare_project(tmp_path: Path) -> Path:
    """A folder with the committed params.yaml and a stand-in activate: enough for the script when dvc and srun
    only note their calls."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "params.yaml").write_text((PROJECT_ROOT / "params.yaml").read_text())
    activate_stand_in(project, real=False)
    return project


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """Where the stand-ins write what they saw."""
    folder = tmp_path / "logs"
    folder.mkdir()
    return folder


def test_the_script_asks_for_cores_and_passes_them_to_srun_and_never_sleeps() -> None:
    """The job asks for cores, memory and its nodes alone; srun hands the cores on; no node waits a fixed time."""
    text = SCRIPT.read_text()
    options = dict(re.findall(r"^#SBATCH (--[\w-]+)(?:=(\S+))?", text, re.MULTILINE))
    assert int(options["--cpus-per-task"]) > 1 and "--exclusive" in options and "--mem" in options, options
    assert (options["--nodes"], options["--ntasks-per-node"], options["--gpus-per-node"]) == ("2", "1", "4")
    commands = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[0] == "set -euo pipefail", commands[0]
    srun = next(line for line in commands if line.startswith("srun "))
    assert '--cpus-per-task="$cpus_per_task"' in srun and "--kill-on-bad-exit=1" in srun, srun
    assert not re.search(r"\bsleep\b", text), "no node waits a fixed time"
    assert "dvc exp run" not in "\n".join(commands), "dvc exp run stashes params.yaml while the other node reads it"
    assert "export NCCL_SOCKET_IFNAME=" in text and "export NCCL_DEBUG=WARN" in text
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0


def test_the_values_are_written_once_before_srun_and_every_comment_kept(
    bare_project: Path, tmp_path: Path, logs: Path
) -> None:
    """By default cuda, devices auto (the node's GPUs), the first host at port 29400, before prepare, srun (with the
    cores), exp save."""
    bin_folder = stand_ins(tmp_path / "bin", recording=("srun", "dvc"))
    done = run_script(bare_project, script_env(bare_project, bin_folder, logs, SLURM_CPUS_PER_TASK="7"))
    assert done.returncode == 0, done.stderr
    prepare, srun, save = calls(logs)
    assert prepare == "dvc repro prepare@fashion_mnist", prepare
    assert srun.startswith("srun --kill-on-bad-exit=1 --cpus-per-task=7 bash -c "), srun
    assert save == f"dvc exp save --name slurm-{JOB_ID} train@fashion_mnist", save
    hardware = yaml.safe_load((bare_project / "params.yaml").read_text())["hardware"]
    assert [hardware[key] for key in MULTI_NODE_KEYS] == ["cuda", "auto", 2, "127.0.0.1:29400"], hardware
    before = (PROJECT_ROOT / "params.yaml").read_text().splitlines()
    after = (bare_project / "params.yaml").read_text().splitlines()
    changed = [(old, new) for old, new in zip(before, after, strict=True) if old != new]
    assert changed and {old.split(":")[0].strip() for old, _ in changed} <= set(MULTI_NODE_KEYS), changed
    assert all(old.partition("#")[2] == new.partition("#")[2] for old, new in changed), "comments kept"
    assert sorted(path.name for path in bare_project.iterdir()) == [".venv", "params.yaml"], "no temporary file left"


@pytest.mark.parametrize(
    ("scontrol", "cpus", "message"),
    [(FAILING_SCONTROL, "1", "Unable to contact slurm"), (SCONTROL, None, "#SBATCH --cpus-per-task")],
    ids=["scontrol-fails", "no-cpus-per-task"],
)
def test_no_host_list_or_no_cores_stops_the_script_before_it_touches_params(
    bare_project: Path, tmp_path: Path, logs: Path, scontrol: str, cpus: str | None, message: str
) -> None:
    """A failing scontrol (set -e) or a job without --cpus-per-task stops it before any edit, dvc or srun."""
    bin_folder = stand_ins(tmp_path / "bin", scontrol, recording=("srun", "dvc"))
    done = run_script(bare_project, script_env(bare_project, bin_folder, logs, SLURM_CPUS_PER_TASK=cpus))
    assert done.returncode != 0 and message in done.stderr, done.stderr
    assert calls(logs) == [], "neither dvc nor srun ran"
    assert (bare_project / "params.yaml").read_text() == (PROJECT_ROOT / "params.yaml").read_text()


def test_a_failed_node_fails_the_job_and_saves_no_experiment(bare_project: Path, tmp_path: Path, logs: Path) -> None:
    """srun failing (a node failed) ends the script with its status (set -e): no dvc exp save follows."""
    bin_folder = stand_ins(tmp_path / "bin", recording=("srun", "dvc"))
    done = run_script(bare_project, script_env(bare_project, bin_folder, logs, STANDIN_FAILS="srun"))
    assert done.returncode == 3, done.stderr
    assert [call.split()[:2] for call in calls(logs)] == [["dvc", "repro"], ["srun", "--kill-on-bad-exit=1"]]


def dvc_project(tmp_path: Path) -> Path:
    """A git repository holding a copy of the project at the tiny scale (ddp, 1 thread per process, Fashion-MNIST
    from a local fixture), committed as it is, with the real activate."""
    project = make_dvc_project(tmp_path)
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["strategy"] = "ddp"
    params["hardware"].update(threads=1, timeout_s=60, join_timeout_s=60)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    activate_stand_in(project, real=True)
    for command in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "project"]):
        subprocess.run(command, cwd=project, env={**os.environ, **GIT_IDENTITY}, check=True)
    return project


def plan_line(log: str) -> str:
    """The line in which a node's train() says what it planned: strategy, processes, threads, batch, lr."""
    lines = re.findall(r"train@fashion_mnist: strategy .*", log)
    assert len(lines) == 1, log
    return lines[0]


@pytest.mark.slow
def test_two_nodes_on_loopback_plan_the_same_run_and_train_it_as_one_job(tmp_path: Path, logs: Path) -> None:
    """Both roles start at once from one unchanging params.yaml, train over 2 nodes and save experiment slurm-<id>."""
    project = dvc_project(tmp_path)
    env = script_env(
        project,
        stand_ins(tmp_path / "bin"),
        logs,
        PARABENCH_ACCELERATOR="cpu",
        PARABENCH_DEVICES="1",
        PARABENCH_PORT=str(free_port()),
    )
    done = run_script(project, env, limit_s=300)
    node_logs = [
        (logs / f"node-{node}.log").read_text() if (logs / f"node-{node}.log").exists() else "" for node in (0, 1)
    ]
    assert done.returncode == 0, f"{done.stderr}\nnode 0:\n{node_logs[0]}\nnode 1:\n{node_logs[1]}"
    srun = json.loads((logs / "srun.json").read_text())
    assert srun["statuses"] == [0, 0] and "--cpus-per-task=1" in srun["options"], srun
    written = (project / "params.yaml").read_bytes()
    assert srun["params_seen"] == [hashlib.sha256(written).hexdigest()], "params.yaml changed while the nodes ran"
    assert plan_line(node_logs[0]) == plan_line(node_logs[1])
    assert "2 process(es) x 1 thread(s)" in plan_line(node_logs[0]) and plan_line(node_logs[0]).endswith(" on cpu")
    record = json.loads((project / "results/train/fashion_mnist.json").read_text())
    assert (record["environment"]["nodes"], record["processes"], record["replicas"]) == (2, 2, 2)
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)", "refs/exps"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    saved = [ref for ref in refs if ref.endswith(f"/slurm-{JOB_ID}")]
    assert len(saved) == 1, refs
    shown = subprocess.run(
        ["git", "show", f"{saved[0]}:params.yaml"], cwd=project, env=env, capture_output=True, check=True
    ).stdout
    assert shown == written, "the experiment holds the params the nodes ran with"


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: cuda is no fallback here")
def test_the_default_accelerator_cuda_stops_a_cpu_only_node_before_srun(tmp_path: Path, logs: Path) -> None:
    """Left at cuda on a machine without a GPU, the check stage stops the job before srun starts any node."""
    project = dvc_project(tmp_path)
    bin_folder = stand_ins(tmp_path / "bin", recording=("srun",))
    done = run_script(project, script_env(project, bin_folder, logs))
    assert done.returncode != 0 and calls(logs) == [], "srun never ran"
    assert "hardware.accelerator: 'cuda'" in done.stderr and "no CUDA device" in done.stderr, done.stderr
