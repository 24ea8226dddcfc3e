"""End to end through DVC: `dvc repro` on tiny fixtures; then `dvc exp run -S strategy=model_parallel` of one workload
re-runs only what that workload's answer depends on (tests/test_pipeline_edits.py: the edits a run resumes or refuses
to resume through; tests/test_dvc_yaml_paths.py: which stages each params key re-runs)."""

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
from tests.conftest import CHECK_STAGE, PROJECT_ROOT, pipeline_stages, python_path
from tests.hotdog_fixture import write_class_folder
from tests.miniimagenet_fixture import write_image_folder

TOP_LEVEL_OUTPUTS = {
    ".venv",
    ".git",
    "data",
    "models",
    "metrics",
    "plots",
    "checkpoints",
    "results",
    "report",
    "test-artifacts",
}
ANYWHERE = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "cache", "tmp", "dvc.lock"}
TINY_SCALE = {
    "epochs": 2,
    "batch_size": 32,
    "lr": 0.05,
    "momentum": 0.0,
    "weight_decay": 0.0,
    "scaling": "strong",
    "train_subset": None,
    "eval_batch_size": 64,
    "epoch_test_images": 32,
    "warmup_steps": 1,
    "seed": 0,
    "width": 4,
}
TINY_EPISODES = {
    "epochs": 2,
    "batch_size": 2,
    "lr": 0.001,
    "scaling": "strong",
    "warmup_steps": 1,
    "seed": 0,
    "encoder": "conv4",
    "width": 4,
    "n_way": 3,
    "n_shot": 1,
    "n_query": 2,
    "eval_n_query": 1,
    "episodes_per_epoch": 4,
    "val_episodes": 3,
    "test_episodes": 5,
    "eval_batch_size": 5,
    "lr_step_size": None,
    "lr_gamma": 0.5,
}
TINY_HOTDOG = {
    "epochs": 1,
    "batch_size": 8,
    "lr": 0.01,
    "scaling": "strong",
    "warmup_steps": 1,
    "seed": 0,
    "pretrained": "none",
    "freeze_backbone": False,
    "head_lr_mult": 10,
    "optimizer": "sgd",
    "momentum": 0.9,
    "weight_decay": 0.001,
    "image_size": 32,
    "crop_scale": 0.35,
    "eval_batch_size": 8,
    "width": 8,
}
TINY_RESNET50 = {
    "epochs": 2,
    "batch_size": 4,
    "lr": 0.001,
    "scaling": "strong",
    "warmup_steps": 1,
    "seed": 0,
    "image_size": 48,
    "num_classes": 10,
    "num_batches": 1,
}
TINY_SWEEP = {"min_turns": 2, "max_turns": 2, "warmup_steps": 0, "turn_steps": 1}
DATASETS = ("fashion_mnist", "miniimagenet", "hotdog")  # each has its download and prepare stage
# The workloads the tiny project runs (params.yaml `inputs`): one scored on a dataset, one synthetic. Every workload's
# stages are the same foreach entries of dvc.yaml; `make run` runs all four on real data, and each workload's own
# tests train it under every strategy.
WORKLOADS = ("fashion_mnist", "resnet50")
SWEEPS = ("split_size",)  # its in-process curve; the distributed ones run in make run and test_torchrun_jobs


def write_fixture_dataset(folder: Path, seed: int = 0) -> Path:
    """Four small Fashion-MNIST-shaped idx files: 256 training and 64 test images."""
    generator = np.random.default_rng(seed)
    folder.mkdir()
    for prefix, count in (("train", 256), ("t10k", 64)):
        images = generator.integers(0, 256, (count, 28, 28), dtype=np.uint8)
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", generator.integers(0, 10, count, dtype=np.uint8))
    return folder


def make_project(tmp_path: Path) -> Path:
    """A git repository holding a copy of the project, set to the tiny scale and the fixture data."""
    project = tmp_path / "project"

    def outputs(folder: str, names: list[str]) -> list[str]:
        top = Path(folder) == PROJECT_ROOT
        return [name for name in names if name in ANYWHERE or (top and name in TOP_LEVEL_OUTPUTS)]

    shutil.copytree(PROJECT_ROOT, project, ignore=outputs)
    write_fixture_dataset(tmp_path / "fixture-data")
    write_image_folder(tmp_path / "fixture-episodes")
    write_class_folder(tmp_path / "fixture-hotdog")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["scales"]["fashion_mnist"]["tiny"] = TINY_SCALE
    params["scales"]["miniimagenet"]["tiny"] = TINY_EPISODES
    params["scales"]["hotdog"]["tiny"] = TINY_HOTDOG
    params["scales"]["resnet50"]["tiny"] = TINY_RESNET50
    params["pipeline"]["split_size"]["resnet50"] = 2
    params["sweeps"] = {"split_size": params["sweeps"]["split_size"]}
    for sweep in params["sweeps"].values():
        sweep.update(TINY_SWEEP)
        sweep["curves"] = {"inprocess": sweep["curves"]["inprocess"]}
        sweep["values"]["tiny"] = [2]
    params["scale"] = "tiny"
    params["inputs"] = {workload: params["inputs"][workload] for workload in WORKLOADS}
    # single, its A/A control and the ceiling run, dp is skipped on the CPU: every kind of cell, in its layout's job
    params["benchmark"].update(strategies=["single", "dp"], min_turns=2, max_turns=2, warmup_steps=1, turn_steps=1)
    params["predict"]["probe_max_bytes"] = 4096
    params["data"]["fashion_mnist"]["source"] = str(tmp_path / "fixture-data")
    params["data"]["miniimagenet"]["source"] = str(tmp_path / "fixture-episodes")
    params["data"]["hotdog"]["source"] = str(tmp_path / "fixture-hotdog")
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return project


def run(project: Path, *command: str) -> str:
    done = attempt(project, *command)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def attempt(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PARABENCH_DATA_MIRROR"}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        PYTHONPATH=python_path(project),
        DVC_NO_ANALYTICS="1",
        GIT_AUTHOR_NAME="test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
    )
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=2400)


def outputs_of(project: Path) -> dict[str, bytes]:
    """Every metric, result and model file the pipeline wrote."""
    return {
        str(path.relative_to(project)): path.read_bytes()
        for folder in ("metrics", "results", "models", "plots")
        for path in sorted((project / folder).rglob("*"))
        if path.is_file()
    }


def breaks_before_any_stage(project: Path, edit, expected: str) -> None:
    """`dvc repro` with params.yaml edited stops at the check stage with `expected`, and every output stays."""
    good = (project / "params.yaml").read_text()
    edit_params(project, edit)
    before = outputs_of(project)
    done = attempt(project, "dvc", "repro")
    (project / "params.yaml").write_text(good)
    assert done.returncode != 0 and expected in done.stdout + done.stderr, done.stdout + done.stderr
    assert stages_run(done.stdout + done.stderr) == {CHECK_STAGE}
    after = outputs_of(project)
    assert after == before, "nothing the user had is lost"


def edit_params(project: Path, edit) -> None:
    """Change params.yaml as a user would, with `edit` applied to its values."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    edit(params)
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def test_every_timing_stage_depends_on_the_machine():
    stages = pipeline_stages()
    assert stages[CHECK_STAGE]["always_changed"] is True
    assert {"results/environment.json": {"persist": True}} in stages[CHECK_STAGE]["outs"]
    for name in ("train", "reference", "benchmark", "sweep"):
        assert "results/environment.json" in stages[name]["do"]["deps"], name


def test_checkpoints_persist_for_resuming_but_stay_out_of_dvc_s_cache():
    stages = pipeline_stages()
    for role in ("train", "reference"):
        outs = [out for out in stages[role]["do"]["outs"] if isinstance(out, dict)]
        assert {f"checkpoints/{role}/${{key}}.pt": {"persist": True, "cache": False}} in outs, role


def stages_of(*kinds: str) -> set[str]:
    return {f"{kind}@{workload}" for kind in kinds for workload in WORKLOADS}


def assert_the_report_shows_every_seed_experiment(page: Path) -> None:
    """report/index.html: a section per workload with its question and answer, every figure embedded, no request."""
    text = page.read_text()
    for workload in WORKLOADS:
        assert f'<section id="{workload}">' in text, workload
    assert text.count('class="answer"') == len(WORKLOADS)
    assert '<p class="answer">No strategy beats single here (' in text, "single is the only strategy benchmarked"
    # a benchmark and an epoch figure per workload, and one per sweep
    assert text.count('src="data:image/png;base64,') == 2 * len(WORKLOADS) + len(SWEEPS)
    assert not re.search(r'(src|href)="(https?:)?//', text), "the page asks no network for anything"
    assert "Skipped on this machine" in text and "needs" in text, "dp's reason is on the page"
    assert "where the step goes" in text and "compute" in text


@pytest.mark.slow
def test_repro_then_experiment(tmp_path):
    project = make_project(tmp_path)
    run(project, "git", "init", "-q")
    run(project, "git", "add", "-A")
    run(project, "git", "commit", "-qm", "project")

    first = run(project, "dvc", "repro")
    assert stages_run(first) == {CHECK_STAGE, "probe", "report"} | {
        f"{kind}@{sweep}" for kind in ("sweep", "sweep_summary") for sweep in SWEEPS
    } | stages_of("train", "reference", "evaluate", "benchmark", "speedup", "predict") | {
        f"{kind}@{dataset}" for kind in ("download", "prepare") for dataset in DATASETS
    }, "resnet50 has no data stages"
    assert_the_report_shows_every_seed_experiment(project / "report" / "index.html")
    again = run(project, "dvc", "repro")
    assert stages_run(again) == {CHECK_STAGE} and "as at the last passing check: it stands" in again, again
    assert "dp on fashion_mnist skipped" in again, "the check's findings are repeated"
    shown = run(project, "dvc", "metrics", "show")
    header, *rows = shown.splitlines()
    # A workload's answer is one small file of about a dozen values (a column each in `dvc exp show`); the benchmark's
    # cells are in results/. The columns: those keys, resnet50's `accuracy` (in words) and the sweeps' few.
    for workload in WORKLOADS:
        answer = json.loads((project / f"metrics/speedup/{workload}.json").read_text())
        assert len(answer) <= 11, f"about a dozen columns per workload: {sorted(answer)}"
    assert len(header.split()) <= 22 and max(map(len, rows)) <= 400, f"a screen's worth, not more:\n{shown}"
    for expected in (
        "speedup",
        "test_acc",
        "test_acc_ci95",
        "test_acc_delta_ci95",
        "data_origin",
        "SAMPLE",  # the fixture's miniImageNet folder: a sample of it, from a local folder
        "n/a (synthetic data)",
        "best_value",
        "metrics/sweep/split_size/inprocess.json",
        "speedup_vs_largest_value",
        "metrics/prediction/fashion_mnist.json",
        "ddp_efficiency_at_64",
    ):
        assert expected in shown, expected
    summary = run(project, "python", "-m", "parabench.report.summary")
    assert "ddp/single" in summary and "A/A control" in summary and "ceiling" in summary and "resnet50" in summary
    assert "hotdog" not in summary, "a workload left out of `inputs` is left out of the summary"
    assert summary.rstrip().endswith("report/index.html"), "make run ends by naming the report"
    run(project, "git", "add", "-A")
    run(project, "git", "commit", "-qm", "baseline")
    fresh = tmp_path / "fresh"
    run(tmp_path, "git", "clone", "-q", str(project), str(fresh))
    unmeasured = run(fresh, "dvc", "metrics", "show")
    assert unmeasured.splitlines()[0].split() == ["Path"], (
        f"a fresh clone shows no number it did not measure itself:\n{unmeasured}"
    )

    # A bad params.yaml stops at the check stage, before DVC removes any output; a misspelt key beside the real
    # one stops it too, although every stage is cached and DVC itself does not read that key; and the project's
    # message comes before DVC's own about a missing parameter. (Every other bad value is a test_config case:
    # the check stage runs the same validation.)
    breaks_before_any_stage(project, lambda p: p["hardware"].update(devics=4), "did you mean 'devices'?")
    breaks_before_any_stage(project, lambda p: p.update(stratgy=p.pop("strategy")), "did you mean 'strategy'?")

    # The baseline trained ddp under torchrun, through DVC; an experiment with another strategy re-runs only what
    # depends on it (model_parallel: one process, so the experiment costs no torchrun start-up).
    for workload in WORKLOADS:
        record = json.loads((project / f"results/train/{workload}.json").read_text())
        assert (record["strategy"], record["processes"], record["environment"]["backend"]) == ("ddp", 2, "gloo")
        assert set(record["peak_memory_mb"]) == {"rank0", "rank1"}
        assert record["environment"]["cpu_capability"] and record["environment"]["cpu_model"]
    synthetic = json.loads((project / "metrics/speedup/resnet50.json").read_text())
    assert synthetic["accuracy"] == "n/a (synthetic data)" and "test_acc" not in synthetic
    # One workload's answer, as a user asks for it: its stages and what they need, nothing else (which stages each
    # params key re-runs in the whole pipeline: tests/test_dvc_yaml_paths.py).
    experiment = run(project, "dvc", "exp", "run", "-S", "strategy=model_parallel", "speedup@fashion_mnist")
    rerun = {f"{kind}@fashion_mnist" for kind in ("train", "evaluate", "speedup")}
    assert stages_run(experiment) == {CHECK_STAGE} | rerun
    record = json.loads((project / "results/train/fashion_mnist.json").read_text())
    assert (record["strategy"], record["processes"], record["strategy_details"]["stages"]) == ("model_parallel", 1, 2)
    compared = json.loads((project / "metrics/speedup/fashion_mnist.json").read_text())
    more = json.loads((project / "results/speedup/fashion_mnist.json").read_text())
    assert (compared["strategy"], more["reference"]) == ("model_parallel", "single")
    assert compared["speedup"] > 0 and more["speedup_end_to_end"] > 0 and compared["data_origin"]
    assert "test_acc" in compared and "test_acc_delta" in compared
    for workload in WORKLOADS:
        cells = json.loads((project / f"results/benchmark/{workload}.json").read_text())["cells"]
        assert cells["single"]["status"] == "ran" and cells["single"]["speedup"] == 1.0
        assert cells["ceiling"]["status"] == "ran" and cells["dp"]["status"] == "skipped"
        assert (project / f"plots/figures/benchmark-{workload}.png").stat().st_size > 0
    assert "test_acc_ci95" in json.loads((project / "metrics/speedup/fashion_mnist.json").read_text())

    # the README's recipe, in its form for a key that only one metrics file has (DVC then names the column by the key
    # alone: here test_acc_delta, fashion_mnist being the only scored workload)
    kept = run(
        project,
        "dvc",
        "exp",
        "show",
        "--csv",
        "--drop",
        ".*",
        "--keep",
        "Experiment|(metrics/speedup/fashion_mnist.json:)?(strategy|speedup|test_acc_delta)$",
    )
    header, *rows = kept.splitlines()
    assert header.split(",") == [
        "Experiment",
        "metrics/speedup/fashion_mnist.json:strategy",
        "test_acc_delta",
        "metrics/speedup/fashion_mnist.json:speedup",
    ]
    assert {row.split(",")[1] for row in rows} == {"ddp", "model_parallel"}
    # What changed between the experiments, as docs/pipeline.md shows it: the param and the answer it moved, a few
    # columns out of the hundreds `dvc exp show` holds (every params key and dependency).
    changed, everything = (
        run(project, "dvc", "exp", "show", "--csv", *only).splitlines()[0].split(",")
        for only in (["--only-changed", "--drop", "^(models|plots|results)/"], [])
    )
    assert "params.yaml:strategy" in changed and "metrics/speedup/fashion_mnist.json:strategy" in changed
    assert len(changed) <= 20 < 100 < len(everything), f"a few columns of {len(everything)}: {changed}"
    diff = run(project, "dvc", "metrics", "diff")
    assert "speedup" in diff and max(map(len, diff.splitlines())) <= 200, f"one screen wide:\n{diff}"
    run(project, "dvc", "plots", "show", "-o", str(tmp_path / "plots"))
    page = (tmp_path / "plots" / "index.html").read_text()
    assert "test_acc" in page and "train_loss" in page and "median_s" in page
    assert '"y2"' in page, "the sweeps are drawn with their spread (.dvc/plots/sweep_band.json)"
    run(project, "dvc", "plots", "diff", "HEAD", "-o", str(tmp_path / "diff"))
    overlay = (tmp_path / "diff" / "index.html").read_text()
    assert "HEAD" in overlay and "workspace" in overlay
