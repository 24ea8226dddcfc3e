"""End to end through DVC: `dvc repro` on tiny fixtures, then `dvc exp run -S strategy=ddp` re-runs only what
depends on it, and runs whose strategy ignores a changed option finish from their checkpoints."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from parabench.data.idx import write_idx
from tests.conftest import PROJECT_ROOT

TOP_LEVEL_OUTPUTS = {".venv", ".git", "data", "models", "metrics", "plots", "checkpoints", "dvc.lock", "report"}
ANYWHERE = {"__pycache__", ".pytest_cache", "cache", "tmp"}
TINY_SCALE = {
    "epochs": 2, "batch_size": 32, "lr": 0.05, "momentum": 0.0, "weight_decay": 0.0, "scaling": "strong",
    "train_subset": None, "eval_batch_size": 64, "warmup_steps": 1, "seed": 0, "width": 4,
}


def write_fixture_dataset(folder: Path) -> None:
    """Four small Fashion-MNIST-shaped idx files: 256 training and 64 test images."""
    generator = np.random.default_rng(0)
    folder.mkdir()
    for prefix, count in (("train", 256), ("t10k", 64)):
        images = generator.integers(0, 256, (count, 28, 28), dtype=np.uint8)
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", generator.integers(0, 10, count, dtype=np.uint8))


def make_project(tmp_path: Path) -> Path:
    """A git repository holding a copy of the project, set to the tiny scale and the fixture data."""
    project = tmp_path / "project"
    def outputs(folder: str, names: list[str]) -> list[str]:
        top = Path(folder) == PROJECT_ROOT
        return [name for name in names if name in ANYWHERE or (top and name in TOP_LEVEL_OUTPUTS)]

    shutil.copytree(PROJECT_ROOT, project, ignore=outputs)
    write_fixture_dataset(tmp_path / "fixture-data")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["scales"]["fashion_mnist"]["tiny"] = TINY_SCALE
    params["scale"] = "tiny"
    params["benchmark"].update(rounds=2, warmup_steps=1, timed_steps=2)
    params["data"]["fashion_mnist"]["source"] = str(tmp_path / "fixture-data")
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return project


def run(project: Path, *command: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PARABENCH_DATA_MIRROR"}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", PYTHONPATH=str(project / "src"),
        DVC_NO_ANALYTICS="1",
        GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@example.invalid",
    )
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


@pytest.mark.slow
def test_repro_then_ddp_experiment(tmp_path):
    project = make_project(tmp_path)
    run(project, "git", "init", "-q")
    run(project, "git", "add", "-A")
    run(project, "git", "commit", "-qm", "project")

    first = run(project, "dvc", "repro")
    every_stage = {f"{stage}@fashion_mnist" for stage in ("download", "prepare", "train", "reference", "evaluate",
                                                          "speedup")} | {"benchmark"}
    assert stages_run(first) == every_stage
    run(project, "git", "add", "-A")
    run(project, "git", "commit", "-qm", "baseline")

    experiment = run(project, "dvc", "exp", "run", "-S", "strategy=ddp")
    assert stages_run(experiment) == {"train@fashion_mnist", "evaluate@fashion_mnist", "speedup@fashion_mnist"}
    metrics = yaml.safe_load((project / "metrics/train/fashion_mnist.json").read_text())
    assert (metrics["strategy"], metrics["processes"], metrics["environment"]["backend"]) == ("ddp", 2, "gloo")
    assert set(metrics["peak_memory_mb"]) == {"rank0", "rank1"}

    benchmark = json.loads((project / "metrics/benchmark.json").read_text())["fashion_mnist"]
    assert benchmark["single"]["status"] == "ran" and benchmark["single"]["speedup"] == 1.0
    assert (project / "plots/benchmark.png").stat().st_size > 0

    table = run(project, "dvc", "exp", "show", "--csv")
    assert "ddp" in table and "speedup" in table
    assert "train_time_s" in run(project, "dvc", "metrics", "diff")
    every_metric = run(project, "dvc", "metrics", "diff", "--all")
    assert "samples_per_s" in every_metric and "test_acc" in every_metric and "speedup" in every_metric
    run(project, "dvc", "plots", "show", "-o", str(tmp_path / "plots"))
    page = (tmp_path / "plots" / "index.html").read_text()
    assert "test_acc" in page and "train_loss" in page
    run(project, "dvc", "plots", "diff", "HEAD", "-o", str(tmp_path / "diff"))
    overlay = (tmp_path / "diff" / "index.html").read_text()
    assert "HEAD" in overlay and "workspace" in overlay

    # Strategies that ignore the pipeline options finish from their checkpoints when those options change.
    resplit = run(project, "dvc", "exp", "run", "-S", "pipeline.split_size=16")
    assert {"train@fashion_mnist", "reference@fashion_mnist", "benchmark"} <= stages_run(resplit)
    for role in ("train", "reference"):
        metrics = yaml.safe_load((project / f"metrics/{role}/fashion_mnist.json").read_text())
        assert metrics["resumed_after_epoch"] == TINY_SCALE["epochs"], f"{role} trained again"
