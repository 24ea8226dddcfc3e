"""The miniimagenet workload on a tiny prepared folder: episodes as batches, evaluation, a short training run."""

import pytest
import torch

from parabench.data.miniimagenet import MINIIMAGENET
from parabench.engine.plan import RunPlan
from parabench.engine.training import fit
from parabench.errors import DataError
from parabench.workloads import WORKLOADS
from parabench.workloads.miniimagenet import MiniImagenetSettings
from tests.miniimagenet_fixture import write_image_folder
from tests.setups import CPU_PROCESS, cpu_setup

WORKLOAD = WORKLOADS["miniimagenet"]


def settings(**changes) -> MiniImagenetSettings:
    values = {
        "epochs": 1,
        "batch_size": 2,
        "lr": 0.001,
        "scaling": "strong",
        "warmup_steps": 1,
        "seed": 0,
        "encoder": "conv4",
        "width": 8,
        "n_way": 3,
        "n_shot": 1,
        "n_query": 2,
        "eval_n_query": 1,
        "episodes_per_epoch": 4,
        "val_episodes": 5,
        "test_episodes": 7,
        "eval_batch_size": 3,
        "lr_step_size": None,
        "lr_gamma": 0.5,
    }
    return MiniImagenetSettings(**{**values, **changes})


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    folder = write_image_folder(tmp_path_factory.mktemp("raw"))
    out = tmp_path_factory.mktemp("prepared") / "miniimagenet"
    MINIIMAGENET.prepare(folder, out)
    return out


def test_episodes_are_the_units_of_a_batch(prepared):
    data = WORKLOAD.open(prepared, settings())
    assert (data.unit, data.train_units, data.epoch_split) == ("episode", 4, "val")
    batch = data.train_batch(0, torch.tensor([2, 0]))
    assert batch.inputs.shape == (2, 3 * 3, 3, 84, 84) and batch.inputs.dtype == torch.uint8
    assert batch.targets.tolist() == [[0, 0, 1, 1, 2, 2]] * 2
    again = data.train_batch(0, torch.tensor([0]))
    assert torch.equal(again.inputs[0], batch.inputs[1]), "episode 0 of epoch 0 is the same wherever it is drawn"
    assert data.data_origin.startswith("miniImageNet SAMPLE: 40 of the official 60,000 images")
    assert (data.provenance["dataset"], data.provenance["kind"]) == ("miniimagenet", "unrecorded")


def test_a_class_too_small_for_an_episode_is_named_with_the_fix(prepared):
    with pytest.raises(DataError, match=r"train split cannot make .*with 4 queries.*n_query"):
        WORKLOAD.open(prepared, settings(n_query=4))


def test_evaluation_is_seeded_and_has_an_interval(prepared):
    data = WORKLOAD.open(prepared, settings())
    torch.manual_seed(0)
    model = WORKLOAD.build_model(settings())
    first, second = data.evaluate(model, "test", torch.device("cpu")), data.evaluate(model, "test", torch.device("cpu"))
    assert first == second and set(first) == {"test_acc", "test_acc_ci95"}
    assert 0 <= first["test_acc"] <= 1 and first["test_acc_ci95"] >= 0
    assert model.training, "evaluation restores training mode"


def test_a_short_run_records_episode_metrics(prepared, tmp_path):
    torch.set_num_threads(1)
    chosen = settings(epochs=2)
    setup = cpu_setup(batch_shape=(2, *WORKLOAD.unit_shape(chosen)), blocks=8)
    plan = RunPlan(
        role="train",
        workload_name="miniimagenet",
        strategy_name="single",
        dataset="miniimagenet",
        scale="tiny",
        settings=chosen,
        setup=setup,
        replicas=1,
        global_batch=2,
        lr=0.001,
    )
    result = fit(plan, CPU_PROCESS, WORKLOAD.open(prepared, chosen), tmp_path / "ckpt.pt", "test data")
    assert [row["epoch"] for row in result.history] == [1, 2]
    assert {"train_loss", "train_acc", "val_acc", "val_acc_ci95", "units_per_s"} <= set(result.history[-1])
    assert result.steps_per_epoch == 2
