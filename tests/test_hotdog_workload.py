"""The hotdog workload through the contract: seeded augmentation, parameter groups, frozen layers, and one step
under `single` equal to `ddp` and `fsdp` on 2 gloo ranks with augmentation on.

Equivalence tolerance: float32 parameters after one SGD step (lr 0.05, head 0.5) within rtol 1e-4, atol 1e-6,
as in the other strategy tests. BatchNorm is frozen (evaluation mode) for the comparison: in training mode each
replica normalises its own images, which tests/test_relation_equivalence.py covers.
"""

from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor
from torchvision.models import resnet18

from parabench.engine.plan import RunPlan
from parabench.engine.training import build_trainer, epoch_batches, optimizer_step
from parabench.models.torchvision_resnet18 import resnet18_blocks
from parabench.runtime.process import Process
from parabench.strategies.partition import block_costs
from parabench.strategies.registry import STRATEGIES
from parabench.workloads.hotdog import Hotdog, HotdogData, HotdogSettings
from parabench.workloads.image_views import eval_views, normalized, train_views
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup

SIZE, STORED, UNITS, BATCH, WORLD, LR, HEAD_MULT = 32, 40, 16, 8, 2, 0.05, 10.0
RTOL, ATOL = 1e-4, 1e-6
DISTRIBUTED = ("ddp", "fsdp")
State = dict[str, Tensor]


def settings(**changes: Any) -> HotdogSettings:
    values = {
        "epochs": 1,
        "batch_size": BATCH,
        "lr": LR,
        "scaling": "strong",
        "warmup_steps": 0,
        "seed": 0,
        "pretrained": "none",
        "freeze_backbone": False,
        "head_lr_mult": HEAD_MULT,
        "optimizer": "sgd",
        "momentum": 0.0,
        "weight_decay": 0.0,
        "image_size": SIZE,
        "crop_scale": 0.08,
        "eval_batch_size": 8,
        "width": 16,
    }
    return HotdogSettings(**{**values, **changes})


def data() -> HotdogData:
    generator = torch.Generator().manual_seed(5)
    images = torch.randint(0, 256, (UNITS, 3, STORED, STORED), dtype=torch.uint8, generator=generator)
    labels = torch.arange(UNITS) % 2
    return HotdogData(images, labels, images[:4], labels[:4], 4, "random images made in the test", SIZE, 0.08)


def plan(strategy: str, devices: int, **changes: Any) -> RunPlan:
    chosen, setup = STRATEGIES[strategy], cpu_setup(devices=devices, blocks=11, batch_shape=(BATCH, 3, SIZE, SIZE))
    return RunPlan(
        role="train",
        workload_name="hotdog",
        strategy_name=strategy,
        dataset="hotdog",
        scale="test",
        settings=settings(**changes),
        setup=setup,
        replicas=chosen.data_replicas(setup),
        global_batch=BATCH,
        lr=LR,
    )


def one_step(strategy: str, process: Process, **changes: Any) -> tuple[State, list[tuple[float, int]]]:
    """One optimiser step of the engine on this process's share of epoch 0's first batch, BatchNorm frozen;
    the parameters after it (gathered) and the optimiser's (lr, parameter count) per group."""
    trainer = build_trainer(plan(strategy, process.world_size, **changes), process, steps_per_epoch=1)
    trainer.parallel.module.eval()
    parallel = trainer.parallel
    batch = next(epoch_batches(data(), BATCH, parallel.shard_index, parallel.shard_count, seed=0, epoch=0))
    optimizer_step(trainer, data(), batch)
    groups = [(group["lr"], len(group["params"])) for group in trainer.optimizer.param_groups]
    state = {key: value for key, value in parallel.full_state_dict().items() if "running" not in key}
    return state, groups


def initial_state() -> State:
    torch.manual_seed(0)
    return dict(Hotdog().build_model(settings()).state_dict())


def test_a_unit_is_augmented_alike_in_any_batch_and_differently_per_seed():
    images = data().train_images[:4]
    seeds = torch.tensor([11, 12, 13, 14])
    together = train_views(images, seeds, SIZE)
    apart = torch.cat([train_views(images[i : i + 1], seeds[i : i + 1], SIZE) for i in range(4)])
    assert torch.equal(together, apart) and together.shape == (4, 3, SIZE, SIZE)
    assert torch.equal(train_views(images, seeds, SIZE), together), "the same seeds give the same views"
    other = train_views(images, seeds + 100, SIZE)
    assert all(not torch.equal(other[i], together[i]) for i in range(4)), "another seed, another view"
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    train_views(images, seeds, SIZE)
    assert torch.equal(torch.rand(1), before), "augmenting leaves the global random stream alone"


def test_the_test_view_is_the_seeds_resize_then_centre_crop():
    images = torch.randint(0, 256, (2, 3, 256, 256), dtype=torch.uint8)
    view = eval_views(images, 224)
    expected = normalized(images[:, :, 16:240, 16:240])  # at 224, resizing 256 to 256 changes nothing
    assert view.shape == (2, 3, 224, 224) and torch.equal(view, expected)


def test_the_engine_seeds_units_by_run_epoch_and_index_not_by_replica():
    whole = next(epoch_batches(data(), BATCH, 0, 1, seed=0, epoch=0))
    halves = [next(epoch_batches(data(), BATCH, rank, WORLD, seed=0, epoch=0)) for rank in range(WORLD)]
    seed_of = {}
    for half in halves:
        for image, seed in zip(half.inputs, half.unit_seeds.tolist()):
            seed_of[image.sum().item()] = seed
    assert {image.sum().item(): seed for image, seed in zip(whole.inputs, whole.unit_seeds.tolist())} == seed_of
    next_epoch = next(epoch_batches(data(), BATCH, 0, 1, seed=0, epoch=1))
    assert not set(next_epoch.unit_seeds.tolist()) & set(whole.unit_seeds.tolist())


def test_the_head_learns_at_ten_times_the_base_rate_under_single():
    state, groups = one_step("single", CPU_PROCESS)
    head = {name for name in state if name.startswith("fc.")}
    assert groups == [(LR, 62 - len(head)), (LR * HEAD_MULT, len(head))]


def test_adamw_keeps_the_groups_and_takes_no_momentum():
    trainer = build_trainer(plan("single", 1, optimizer="adamw", weight_decay=0.05), CPU_PROCESS, steps_per_epoch=1)
    assert isinstance(trainer.optimizer, torch.optim.AdamW)
    assert [(group["lr"], group["weight_decay"]) for group in trainer.optimizer.param_groups] == [
        (LR, 0.05),
        (LR * HEAD_MULT, 0.05),
    ]
    with pytest.raises(ValueError, match=r"momentum: 0\.9 is SGD's, and optimizer is 'adamw'"):
        settings(optimizer="adamw", momentum=0.9)


def test_a_frozen_backbone_gets_no_gradient_and_does_not_move():
    before = initial_state()
    state, groups = one_step("single", CPU_PROCESS, freeze_backbone=True)
    assert groups == [(LR * HEAD_MULT, 2)], "only the head is in the optimiser"
    for name, value in state.items():
        moved = not torch.equal(value, before[name])
        assert moved == name.startswith("fc."), name


def rank_steps(rank: int, world_size: int, out: Path) -> None:
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu"))
    results = {name: one_step(name, process) for name in DISTRIBUTED}
    results["ddp frozen"] = one_step("ddp", process, freeze_backbone=True)
    if rank == 0:
        torch.save(results, out / "results.pt")


@pytest.mark.slow
def test_one_step_under_ddp_and_fsdp_equals_single_with_augmentation_on(tmp_path):
    reference, single_groups = one_step("single", CPU_PROCESS)
    before = initial_state()
    assert max((reference[k] - before[k]).abs().max().item() for k in reference) > 1e-4, "the step changed nothing"
    run_ranks(WORLD, rank_steps, tmp_path)
    results = torch.load(tmp_path / "results.pt")
    for name in DISTRIBUTED:
        state, groups = results[name]
        assert groups == single_groups, f"{name}: the head's lr is {HEAD_MULT}x, as under single"
        assert state.keys() == reference.keys()
        for key in reference:
            torch.testing.assert_close(
                state[key], reference[key], rtol=RTOL, atol=ATOL, msg=lambda m, key=key, name=name: f"{name} {key}: {m}"
            )
    frozen, _ = results["ddp frozen"]
    for key, value in frozen.items():
        assert (not torch.equal(value, before[key])) == key.startswith("fc."), f"ddp frozen: {key}"


def test_the_model_is_torchvisions_and_every_block_can_be_timed_and_cut():
    torch.manual_seed(0)
    model = resnet18_blocks(num_classes=2)
    reference = resnet18(weights=None, num_classes=2)
    reference.load_state_dict(model.state_dict())  # torchvision's keys, unchanged
    images = torch.randn(2, 3, SIZE, SIZE)
    assert torch.equal(model.eval()(images), reference.eval()(images))
    assert len(block_costs(model, images, repeats=1).seconds) == len(model) == 11
    model.relu.inplace = True  # torchvision's own stem: in place, which the first block of a stage must survive
    assert len(block_costs(model, images, repeats=1).seconds) == 11


def test_width_scales_every_stage_and_torchvisions_width_is_its_resnet18():
    narrow = resnet18_blocks(num_classes=2, width=16)
    assert [narrow.conv1.out_channels, narrow.fc.in_features] == [16, 128]
    assert narrow(torch.randn(2, 3, SIZE, SIZE)).shape == (2, 2)
    narrow_weights = sum(parameter.numel() for parameter in narrow.parameters())
    full_weights = sum(parameter.numel() for parameter in resnet18_blocks(num_classes=2).parameters())
    assert narrow_weights / full_weights == pytest.approx((16 / 64) ** 2, rel=0.05)  # a quarter of the width
    assert Hotdog().build_model(settings(width=16)).conv1.out_channels == 16


def test_the_starting_weights_are_named_beside_every_metric():
    """Every hotdog metrics file (speedup and benchmark) carries `pretrained`: scratch and fine-tuned runs differ."""
    assert Hotdog().choices_beside_metrics(settings()) == {"pretrained": "none"}
    assert Hotdog().choices_beside_metrics(settings(pretrained="imagenet", width=64)) == {"pretrained": "imagenet"}
