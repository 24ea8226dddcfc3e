"""The resnet50 workload (seed 001): torchvision's ResNet-50 as six blocks, its cuts in every balance mode, the cut
model equal to the whole one, random data that is seeded, scored by MSE on one-hot targets and never scored for
accuracy, and real pixels from a prepared dataset instead of random ones.

Equivalence tolerance: float32 outputs and gradients within rtol 1e-4, atol 1e-5 (BatchNorm in evaluation mode;
the cut model runs the very same modules, so only the order of float sums may differ).
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from pydantic import ValidationError
from torch.nn import functional as F
from torchvision.models import resnet50
from torchvision.transforms import v2

from parabench.data.fashion_mnist import FASHION_MNIST
from parabench.data.hotdog import HOTDOG
from parabench.data.idx import write_idx
from parabench.errors import ConfigError
from parabench.models.torchvision_resnet50 import SEED_CUT, resnet50_blocks
from parabench.strategies.model_parallel import STRATEGY as MODEL_PARALLEL
from parabench.strategies.model_parallel import StagedModel
from parabench.strategies.partition import choose_cut, cut
from parabench.workloads.image_views import IMAGENET_MEAN, IMAGENET_STD, normalized
from parabench.workloads.resnet50 import Resnet50, Resnet50Settings
from parabench.workloads.timing_images import NOT_APPLICABLE
from tests.hotdog_fixture import write_class_folder
from tests.setups import cpu_setup

SIZE, CLASSES, RTOL, ATOL = 48, 10, 1e-4, 1e-5
BLOCKS = ["stem", "layer1", "layer2", "layer3", "layer4", "head"]


def settings(**changes) -> Resnet50Settings:
    values = {
        "epochs": 1,
        "batch_size": 4,
        "lr": 0.001,
        "scaling": "strong",
        "warmup_steps": 0,
        "seed": 0,
        "image_size": SIZE,
        "num_classes": CLASSES,
        "num_batches": 2,
    }
    return Resnet50Settings(**{**values, **changes})


def test_the_blocks_are_torchvisions_resnet50_whole():
    torch.manual_seed(0)
    blocks = resnet50_blocks(CLASSES).eval()
    torch.manual_seed(0)
    reference = resnet50(num_classes=CLASSES).eval()
    assert [name for name, _ in blocks.named_children()] == BLOCKS
    assert sum(p.numel() for p in blocks.parameters()) == sum(p.numel() for p in reference.parameters())
    images = torch.randn(2, 3, SIZE, SIZE)
    with torch.no_grad():
        torch.testing.assert_close(blocks(images), reference(images), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("balance", ["time", "parameters", "documented"])
def test_every_balance_mode_covers_every_block_once(balance):
    model = resnet50_blocks(CLASSES)
    chosen = choose_cut(model, balance, 2, torch.rand(2, 3, SIZE, SIZE), SEED_CUT)
    stages = cut(model, chosen.sizes)
    names = [name for stage in stages for name, _ in stage.named_children()]
    assert names == BLOCKS and len(stages) == 2
    assert chosen.balance == balance and sum(chosen.stage_time_share) == pytest.approx(1)
    assert min(chosen.stage_time_share) > 0
    if balance == "documented":
        assert [[name for name, _ in stage.named_children()] for stage in stages] == [BLOCKS[:3], BLOCKS[3:]]


def test_the_seed_cut_needs_a_documented_cut_for_as_many_stages():
    """The cut strategies' check, before any cut: `seed` needs the workload's cut, into as many stages as the run."""
    documented = {"documented_cut": SEED_CUT}
    MODEL_PARALLEL.check(cpu_setup(2, balance="documented").model_copy(update=documented), 4)
    with pytest.raises(ConfigError, match=r"partition.balance: 'documented'.*no cut; set partition.balance"):
        MODEL_PARALLEL.check(cpu_setup(2, balance="documented"), 4)
    with pytest.raises(ConfigError, match=r"3 stages; set partition\.stages to 2"):
        MODEL_PARALLEL.check(cpu_setup(3, balance="documented").model_copy(update=documented), 4)


def test_the_cut_model_equals_the_whole_one():
    torch.manual_seed(0)
    whole = resnet50_blocks(CLASSES).eval()
    split = StagedModel(resnet50_blocks(CLASSES), [torch.device("cpu")] * 2, list(SEED_CUT)).eval()
    split.model.load_state_dict(whole.state_dict())
    images = torch.randn(3, 3, SIZE, SIZE)
    targets = F.one_hot(torch.tensor([1, 2, 3]), CLASSES).float()
    outputs = []
    for model in (whole, split):
        output = model(images)
        F.mse_loss(output, targets).backward()
        outputs.append(output.detach())
    torch.testing.assert_close(outputs[1], outputs[0], rtol=RTOL, atol=ATOL)
    for (name, mine), theirs in zip(split.model.named_parameters(), whole.parameters(), strict=True):
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=RTOL, atol=ATOL, msg=name)


def test_random_images_are_seeded_and_scored_by_mse_on_one_hot_targets():
    data = Resnet50().open(None, settings())
    again = Resnet50().open(None, settings())
    other = Resnet50().open(None, settings(seed=1))
    assert data.train_units == 8 and data.images.shape == (8, 3, SIZE, SIZE)
    assert torch.equal(data.images, again.images) and torch.equal(data.classes, again.classes)
    assert not torch.equal(data.images, other.images)
    batch = data.train_batch(0, torch.tensor([5, 2]))
    assert torch.equal(batch.inputs, data.images[[5, 2]])
    outputs = torch.zeros(2, CLASSES)
    assert data.loss(outputs, batch.targets).item() == pytest.approx(1 / CLASSES)
    assert data.tally(outputs, batch.targets) == {} and data.evaluate(resnet50_blocks(CLASSES), "test", "cpu") == {}
    assert data.data_origin.startswith("synthetic: 8 random normal 3x48x48 images") and data.provenance is None


def test_the_workload_says_accuracy_does_not_apply_and_has_no_dataset():
    workload = Resnet50()
    assert workload.dataset is None and workload.primary_metric is None
    assert workload.choices_beside_metrics(settings()) == {"accuracy": NOT_APPLICABLE}
    assert workload.documented_cut(settings()) == SEED_CUT
    assert Path(__file__).parents[1].joinpath(workload.generator_file).is_file(), "the file its stages depend on"


@pytest.fixture(scope="module")
def prepared_hotdog(tmp_path_factory) -> Path:
    """A prepared hotdog-layout folder of 2 x 12 training photos (48 x 40 PNGs, squashed to 256 x 256)."""
    raw = write_class_folder(tmp_path_factory.mktemp("raw"))
    out = tmp_path_factory.mktemp("prepared") / "hotdog"
    HOTDOG.prepare(raw, out)
    return out


def test_real_pixels_are_a_seeded_choice_of_a_datasets_training_images_resized_and_normalised(prepared_hotdog):
    data = Resnet50().open(prepared_hotdog, settings())
    again, other = Resnet50().open(prepared_hotdog, settings()), Resnet50().open(prepared_hotdog, settings(seed=1))
    assert data.images.shape == (8, 3, SIZE, SIZE) and data.images.dtype == torch.float32
    assert torch.equal(data.images, again.images) and torch.equal(data.classes, again.classes)
    assert not torch.equal(data.images, other.images)
    photos = torch.from_numpy(HOTDOG.load_prepared(prepared_hotdog).splits["train"].images)
    views = normalized(v2.functional.resize(photos, [SIZE, SIZE], antialias=True))
    sources = [next(index for index, view in enumerate(views) if torch.equal(view, image)) for image in data.images]
    assert len(set(sources)) == 8, "eight different photos of the 24, each as the workload's own view"
    assert data.classes.max() < CLASSES and data.loss(torch.zeros(2, CLASSES), data.classes[:2]).item() > 0
    assert data.data_origin.startswith("real pixels: 8 training images of a hotdog-layout folder: 24 train + 8 test")
    assert "random classes among 10" in data.data_origin and "NOT d2l's hotdog.zip" in data.data_origin
    assert data.provenance == HOTDOG.load_prepared(prepared_hotdog).provenance.model_dump(), "the pixels' record"


def test_grey_pixels_become_three_equal_channels_and_a_small_set_repeats_only_once_used_up(tmp_path):
    raw, prepared = tmp_path / "raw", tmp_path / "fashion_mnist"
    raw.mkdir()
    generator = np.random.default_rng(0)
    for prefix, count in (("train", 5), ("t10k", 2)):
        write_idx(raw / f"{prefix}-images-idx3-ubyte.gz", generator.integers(0, 256, (count, 28, 28), dtype=np.uint8))
        write_idx(raw / f"{prefix}-labels-idx1-ubyte.gz", generator.integers(0, 10, count, dtype=np.uint8))
    FASHION_MNIST.prepare(raw, prepared)
    data = Resnet50().open(prepared, settings(batch_size=6))  # 12 units from 5 images
    mean, std = torch.tensor(IMAGENET_MEAN).view(3, 1, 1), torch.tensor(IMAGENET_STD).view(3, 1, 1)
    pixels = data.images * std + mean
    torch.testing.assert_close(pixels[:, 0], pixels[:, 1])
    torch.testing.assert_close(pixels[:, 0], pixels[:, 2])
    distinct = [len(torch.unique(data.images[:count].flatten(1), dim=0)) for count in (5, 12)]
    assert distinct == [5, 5], "all five images before any comes twice"
    assert "each used up to 3 times" in data.data_origin and "Fashion-MNIST SAMPLE" in data.data_origin


def test_weak_scaling_and_tiny_images_are_refused():
    with pytest.raises(ValidationError, match="scaling"):
        settings(scaling="weak")
    with pytest.raises(ValidationError, match="image_size"):
        settings(image_size=32)
