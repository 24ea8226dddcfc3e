"""Edits through DVC on the tiny project of tests/test_pipeline_e2e.py, beside it (a file of its own, so that the
two run on both pytest workers): real pixels for resnet50, a pipeline option model_parallel ignores, and another
data folder, each re-running only what depends on it, resuming where the run is the same and refusing where the
data is not."""

import json

import pytest

from tests.conftest import CHECK_STAGE
from tests.test_pipeline_e2e import TINY_SCALE, edit_params, make_project, run, stages_run, write_fixture_dataset


@pytest.mark.slow
def test_edits_re_run_what_depends_on_them_and_resume_only_their_own_run(tmp_path):
    project = make_project(tmp_path)
    edit_params(project, lambda p: p.update(strategy="model_parallel"))
    run(project, "git", "init", "-q")
    run(project, "git", "add", "-A")
    run(project, "git", "commit", "-qm", "project")
    trained = run(project, "dvc", "repro", "train@fashion_mnist", "reference@fashion_mnist")
    assert stages_run(trained) == {
        CHECK_STAGE,
        "download@fashion_mnist",
        "prepare@fashion_mnist",
        "train@fashion_mnist",
        "reference@fashion_mnist",
    }

    # resnet50 times real pixels when `inputs` names a prepared dataset, which its stages then depend on.
    edit_params(project, lambda p: p["inputs"].update(resnet50="data/prepared/fashion_mnist"))
    pixels = run(project, "dvc", "repro", "train@resnet50")
    assert stages_run(pixels) == {CHECK_STAGE, "train@resnet50"}
    origin = json.loads((project / "results/train/resnet50.json").read_text())["data_origin"]
    assert origin.startswith("real pixels: 4 training images of Fashion-MNIST SAMPLE"), origin

    # A strategy that ignores the pipeline options (model_parallel: its stages take the whole batch) finishes from its
    # checkpoint when they change (single alike: tests/test_training_loop.py's run identity).
    edit_params(project, lambda p: p["pipeline"]["split_size"].update(fashion_mnist=16))
    resplit = run(project, "dvc", "repro", "train@fashion_mnist")
    assert stages_run(resplit) == {CHECK_STAGE, "train@fashion_mnist"}
    record = json.loads((project / "results/train/fashion_mnist.json").read_text())
    assert record["resumed_after_epoch"] == TINY_SCALE["epochs"], "model_parallel trained again"

    # A model never outlives its data: another source folder re-runs download, prepare and the reference, which
    # does not resume the checkpoint it trained on the old photos (its settings are unchanged): it is set aside.
    other = str(write_fixture_dataset(tmp_path / "other-fashion", seed=1))
    edit_params(project, lambda p: p["data"]["fashion_mnist"].update(source=other))
    moved = run(project, "dvc", "repro", "reference@fashion_mnist")
    assert stages_run(moved) == {CHECK_STAGE} | {
        f"{kind}@fashion_mnist" for kind in ("download", "prepare", "reference")
    }
    assert "checkpoints/reference/fashion_mnist.pt was trained on other data" in moved
    record = json.loads((project / "results/reference/fashion_mnist.json").read_text())
    assert record["resumed_after_epoch"] == 0 and str(tmp_path / "other-fashion") in record["data_origin"]
    assert (project / "checkpoints/reference/fashion_mnist.pt.other-data").is_file()
