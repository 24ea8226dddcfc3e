"""The launcher plans once; a worker reads the plan from its file and never plans again from params.yaml."""

import json
import subprocess
import sys

from parabench.data.fashion_mnist import FASHION_MNIST, FILES
from parabench.data.idx import write_idx
from parabench.engine.plan import RunPlan
from parabench.workloads.fashion_mnist import FashionMnistSettings
from tests.conftest import python_path
from tests.setups import cpu_setup, separable_images, tiny_plan


def test_a_plan_survives_its_file(tmp_path):
    plan = tiny_plan("pipeline", setup=cpu_setup(devices=2, split_size=4, threads=2))
    plan.save(tmp_path / "plan.json")
    loaded = RunPlan.load(tmp_path / "plan.json")
    assert loaded == plan
    assert isinstance(loaded.settings, FashionMnistSettings), "settings come back as the workload's own model"
    assert (loaded.threads, loaded.setup.pipeline.split_size, loaded.strategy.name) == (2, 4, "pipeline")


def test_a_worker_trains_from_its_plan_file_without_params_yaml(tmp_path):
    """In a folder with no params.yaml, a worker given a plan file trains and writes its results."""
    raw = tmp_path / "separable"
    for split, count in (("train", 64), ("test", 32)):
        images, labels = separable_images(count, seed=len(split))
        write_idx(raw / FILES[f"{split}_images"].name, images.squeeze(1).numpy())
        write_idx(raw / FILES[f"{split}_labels"].name, labels.byte().numpy())
    FASHION_MNIST.prepare(raw, tmp_path / "data" / "prepared" / "fashion_mnist")
    plan = tiny_plan(role="reference", epochs=1)
    plan.save(tmp_path / "plan.json")
    done = subprocess.run(
        [sys.executable, "-m", "parabench.engine.worker", str(tmp_path / "plan.json")],
        cwd=tmp_path,
        env={"PYTHONPATH": python_path(), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "params.yaml").exists()
    record = json.loads((tmp_path / "results" / "reference" / "fashion_mnist.json").read_text())
    assert (record["strategy"], record["epochs"]) == ("single", 1)
    sample = "Fashion-MNIST SAMPLE: 96 of the official 70,000 images (64 train, 32 test)"
    assert record["data_origin"].startswith(sample), "the run's record says what its data is"
    assert (tmp_path / "models" / "reference" / "fashion_mnist.pt").exists()
