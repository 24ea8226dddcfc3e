"""The training loop on tiny data: it learns, it is seeded, and a crashed run resumes from its checkpoint."""

import dataclasses

import pytest
import torch
from torch.nn import functional as F

from parabench.engine.batches import shard_batches
from parabench.engine.loop import fit, run_description
from parabench.engine.step import prepare
from parabench.engine.timing import StepClock
from parabench.engine.train_pass import train_pass
from parabench.engine.plan import RunPlan
from parabench.strategies import STRATEGIES
from parabench.workloads import WORKLOADS, LabelledImages
from tests.setups import CPU_PROCESS, cpu_setup

def tiny_plan(epochs: int) -> RunPlan:
    workload = WORKLOADS["fashion_mnist"]
    settings = workload.settings_model(
        epochs=epochs, batch_size=16, lr=0.05, momentum=0.9, weight_decay=0.0, scaling="strong",
        train_subset=None, eval_batch_size=32, warmup_steps=1, seed=0, width=4,
    )
    return RunPlan(role="train", workload=workload, strategy=STRATEGIES["single"], setup=cpu_setup(),
                   settings=settings, processes=1, replicas=1, global_batch=16, lr=0.05)

def separable_images(count: int, seed: int) -> LabelledImages:
    """Images whose label is written in their brightness, so a working loop must learn them."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (count,), generator=generator)
    images = (torch.rand(count, 1, 28, 28, generator=generator) * 60 + labels.view(-1, 1, 1, 1) * 150).to(torch.uint8)
    return LabelledImages(images=images, labels=labels)

@pytest.fixture
def data() -> tuple[LabelledImages, LabelledImages]:
    return separable_images(128, seed=0), separable_images(64, seed=1)

def test_loop_learns_and_records_every_epoch(tmp_path, data):
    result = fit(tiny_plan(epochs=3), CPU_PROCESS, *data, tmp_path / "ckpt.pt")
    assert [row["epoch"] for row in result.history] == [1, 2, 3]
    assert result.history[-1]["test_acc"] >= 0.9
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]
    assert len(result.step_durations) == 3 * (128 // 16) - 1, "one warm-up step is left out"
    assert result.steps_per_epoch == 8

def test_same_seed_same_result(tmp_path, data):
    first = fit(tiny_plan(epochs=1), CPU_PROCESS, *data, tmp_path / "a.pt")
    second = fit(tiny_plan(epochs=1), CPU_PROCESS, *data, tmp_path / "b.pt")
    for a, b in zip(first.state_dict.values(), second.state_dict.values()):
        assert torch.equal(a, b)

def test_resume_after_a_crash_matches_an_uninterrupted_run(tmp_path, data):
    torch.set_num_threads(1)
    straight = fit(tiny_plan(epochs=2), CPU_PROCESS, *data, tmp_path / "straight.pt")
    crashed_path = tmp_path / "crashed.pt"
    fit(tiny_plan(epochs=1), CPU_PROCESS, *data, crashed_path)  # what a run killed after epoch 1 leaves on disk
    resumed = fit(tiny_plan(epochs=2), CPU_PROCESS, *data, crashed_path)
    assert resumed.resumed_after_epoch == 1
    assert [row["epoch"] for row in resumed.history] == [1, 2]
    for name, value in straight.state_dict.items():
        torch.testing.assert_close(resumed.state_dict[name], value, rtol=1e-5, atol=1e-6)

def test_a_run_is_identified_by_what_shapes_its_math_and_timings_only():
    single = tiny_plan(epochs=1)
    other_split = cpu_setup(split_size=4)
    one_thread_more = dataclasses.replace(single.setup.machine, threads_setting=2)
    assert run_description(dataclasses.replace(single, setup=other_split)) == run_description(single), \
        "single ignores the pipeline options: changing them must not discard its checkpoint"
    assert run_description(dataclasses.replace(single, setup=dataclasses.replace(
        single.setup, machine=one_thread_more))) != run_description(single), "timings differ with the threads"
    pipeline = dataclasses.replace(single, strategy=STRATEGIES["pipeline"], setup=cpu_setup(devices=2))
    assert run_description(dataclasses.replace(pipeline, setup=cpu_setup(devices=2, split_size=4))) \
        != run_description(pipeline), "the pipeline's micro-batches shape its math"


def test_checkpoint_of_another_run_is_ignored(tmp_path, data):
    path = tmp_path / "ckpt.pt"
    fit(tiny_plan(epochs=1), CPU_PROCESS, *data, path)
    other = tiny_plan(epochs=1)
    other = dataclasses.replace(other, lr=0.01, settings=other.settings.model_copy(update={"lr": 0.01}))
    assert fit(other, CPU_PROCESS, *data, path).resumed_after_epoch == 0


def test_train_pass_is_the_hand_written_loop_with_its_totals(data):
    """The loop's pass trains exactly as zero_grad/forward/backward/step would, and sums loss and hits right."""
    torch.set_num_threads(1)
    plan = tiny_plan(epochs=1)
    train, _ = data
    batches = list(shard_batches(len(train), 16, 0, 1, seed=0, epoch=0))
    parallel, optimizer = prepare(plan, CPU_PROCESS)
    totals = train_pass(plan, parallel, optimizer, train, batches, StepClock(CPU_PROCESS.device, 0))

    torch.manual_seed(plan.settings.seed)
    model = plan.workload.build_model(plan.settings)
    by_hand = torch.optim.SGD(model.parameters(), lr=plan.lr, momentum=plan.settings.momentum)
    loss_sum, correct = 0.0, 0
    for indices in batches:
        images, labels = train.images[indices], train.labels[indices]
        by_hand.zero_grad()
        outputs = model(images.float() / 255.0)
        loss = F.cross_entropy(outputs, labels)
        loss.backward()
        by_hand.step()
        loss_sum += loss.item() * len(labels)
        correct += (outputs.argmax(dim=1) == labels).sum().item()

    assert totals[2] == len(batches) * 16
    assert totals[1] == correct
    assert totals[0] == pytest.approx(loss_sum, rel=1e-6)
    for ours, hand in zip(parallel.module.parameters(), model.parameters()):
        torch.testing.assert_close(ours, hand, rtol=0, atol=0)
