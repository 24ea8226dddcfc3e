"""The training loop on tiny data: it learns, it is seeded, and a crashed run resumes from its checkpoint."""

import errno
import re
import shutil
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F

from parabench import io
from parabench.config import load_params
from parabench.engine import checkpoint
from parabench.engine.checkpoint import fingerprint, run_description
from parabench.engine.timing import StepClock
from parabench.engine.training import build_trainer, epoch_batches, fit, shard_batches, train_pass
from parabench.errors import DiskFull
from parabench.runtime.process import Process
from parabench.workloads import WORKLOADS
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup, separable_data, tiny_plan


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def test_loop_learns_and_records_every_epoch(tmp_path):
    """test_every_strategy_trains's settings; `single` reached 1.0 test accuracy at seeds 0-9 with 1 and 2 threads
    on AVX-512 and AVX2 kernels, so 0.75 stands well below the worst value seen (chance: 0.5)."""
    result = fit(tiny_plan(epochs=6, lr=0.01), CPU_PROCESS, separable_data(), tmp_path / "ckpt.pt", "test data")
    assert [row["epoch"] for row in result.history] == [1, 2, 3, 4, 5, 6]
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"] / 10
    assert result.history[-1]["test_acc"] >= 0.75, "two classes: chance is 0.5"
    assert len(result.step_durations) == 6 * (128 // 16) - 1, "one warm-up step is left out"
    assert result.steps_per_epoch == 8


def test_only_a_workload_that_augments_gets_a_seed_per_unit():
    """unit_seeds are drawn for the workloads whose transform reads them (hotdog: tests/test_hotdog_workload.py)."""
    data = separable_data()
    assert not data.augments
    assert all(batch.unit_seeds is None for batch in epoch_batches(data, 32, 0, 1, seed=0, epoch=0))


def test_same_seed_same_result(tmp_path):
    first = fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), tmp_path / "a.pt", "test data")
    second = fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), tmp_path / "b.pt", "test data")
    for a, b in zip(first.state_dict.values(), second.state_dict.values()):
        assert torch.equal(a, b)


def test_resume_after_a_crash_matches_an_uninterrupted_run(tmp_path):
    straight = fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), tmp_path / "straight.pt", "test data")
    crashed_path = tmp_path / "crashed.pt"
    fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), crashed_path, "test data")  # a run killed after epoch 1
    resumed = fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), crashed_path, "test data")
    assert resumed.resumed_after_epoch == 1
    assert [row["epoch"] for row in resumed.history] == [1, 2]
    for name, value in straight.state_dict.items():
        torch.testing.assert_close(resumed.state_dict[name], value, rtol=1e-5, atol=1e-6)


def fit_fsdp_rank(rank: int, world_size: int, epochs: int, checkpoint: Path, out: Path) -> None:
    plan = tiny_plan("fsdp", setup=cpu_setup(devices=2, batch_shape=(16, 1, 28, 28)), epochs=epochs)
    # As worker.job does: epoch_scores sets the plan's threads back after scoring, so a rank that trained epoch 1 on
    # the machine's default instead would train epoch 2 on other kernels' rounding than a resumed run.
    torch.set_num_threads(plan.threads)
    result = fit(plan, Process(rank, rank, world_size, torch.device("cpu")), separable_data(), checkpoint, "test data")
    if rank == 0:
        torch.save({"state": result.state_dict, "resumed_after_epoch": result.resumed_after_epoch}, out)


@pytest.mark.slow
def test_fsdp_resumes_its_sharded_optimiser_state_to_the_uninterrupted_run(tmp_path):
    """fsdp's checkpoint holds DTensor shards of the parameters and of SGD's momentum: resumed on 2 gloo ranks after
    epoch 1, the run ends where an uninterrupted one does (tests/test_torchrun_jobs.py kills a ddp rank for real)."""
    run_ranks(2, fit_fsdp_rank, 2, tmp_path / "straight.pt", tmp_path / "straight")
    run_ranks(2, fit_fsdp_rank, 1, tmp_path / "crashed.pt", tmp_path / "first")  # a run killed after epoch 1
    run_ranks(2, fit_fsdp_rank, 2, tmp_path / "crashed.pt", tmp_path / "resumed")
    straight, resumed = (torch.load(tmp_path / name, weights_only=True) for name in ("straight", "resumed"))
    assert resumed["resumed_after_epoch"] == 1
    for name, value in straight["state"].items():
        torch.testing.assert_close(resumed["state"][name], value, rtol=1e-5, atol=1e-6, msg=name)


def test_a_run_is_identified_by_what_shapes_its_math_and_timings_only():
    single = tiny_plan()
    other_split = single.model_copy(update={"setup": cpu_setup(split_size=4, batch_shape=(16, 1, 28, 28))})
    assert run_description(other_split) == run_description(single), (
        "single ignores the pipeline options: changing them must not discard its checkpoint"
    )
    more_threads = single.model_copy(update={"setup": cpu_setup(threads=2, batch_shape=(16, 1, 28, 28))})
    assert run_description(more_threads) != run_description(single), "timings differ with the threads"
    pipeline = tiny_plan("pipeline", setup=cpu_setup(devices=2))
    resplit = pipeline.model_copy(update={"setup": cpu_setup(devices=2, split_size=4)})
    assert run_description(resplit) != run_description(pipeline), "the pipeline's micro-batches shape its math"
    assert run_description(tiny_plan(epochs=5)) == run_description(tiny_plan(epochs=2)), "a longer run continues"
    cosine = {"lr_schedule": "cosine", "lr_warmup_epochs": 1}
    assert run_description(tiny_plan(epochs=5, **cosine)) != run_description(tiny_plan(epochs=2, **cosine)), (
        "a cosine schedule ends at the last epoch: a longer run is another run"
    )


def test_a_run_on_another_cpu_or_gpu_model_is_another_run(monkeypatch):
    """A resumed run keeps its checkpoint's step times: they must come from the same CPU model, ISA and GPUs."""
    cpu_plan = tiny_plan()
    cuda_machine = cpu_plan.machine.model_copy(update={"accelerator": "cuda", "backend": "nccl"})
    cuda_plan = cpu_plan.model_copy(update={"setup": cpu_plan.setup.model_copy(update={"machine": cuda_machine})})
    monkeypatch.setattr(checkpoint, "cpu_model", lambda: "Intel(R) Xeon(R) Gold 6248")
    monkeypatch.setattr(checkpoint, "gpu_names", lambda: ["NVIDIA A100-SXM4-40GB"])
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    before = {plan.machine.accelerator: fingerprint(run_description(plan)) for plan in (cpu_plan, cuda_plan)}
    assert before == {plan.machine.accelerator: fingerprint(run_description(plan)) for plan in (cpu_plan, cuda_plan)}
    monkeypatch.setattr(checkpoint, "gpu_names", lambda: ["NVIDIA H100 80GB HBM3"])
    assert fingerprint(run_description(cuda_plan)) != before["cuda"], "other GPUs"
    assert fingerprint(run_description(cpu_plan)) == before["cpu"], "a CPU run does not time the GPUs"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    assert fingerprint(run_description(cpu_plan)) != before["cpu"], "other vector kernels"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    monkeypatch.setattr(checkpoint, "cpu_model", lambda: "AMD EPYC 7763 64-Core Processor")
    assert fingerprint(run_description(cpu_plan)) != before["cpu"], "another CPU model"


def test_a_cosine_schedule_warms_up_in_a_line_then_falls_to_zero_at_the_last_step():
    plan = tiny_plan(epochs=3, lr=0.1, lr_schedule="cosine", lr_warmup_epochs=1)
    trainer = build_trainer(plan, CPU_PROCESS, steps_per_epoch=4)
    rates = []
    for _ in range(12):
        rates.append(trainer.optimizer.param_groups[0]["lr"])
        trainer.optimizer.step()
        trainer.schedule.step()
    assert rates[:4] == pytest.approx([0.025, 0.05, 0.075, 0.1]), "4 warm-up steps: one epoch"
    assert rates[4] == pytest.approx(0.1) and rates[4:] == sorted(rates[4:], reverse=True)
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.0), "0 after the 12th and last step"
    assert build_trainer(tiny_plan(), CPU_PROCESS, steps_per_epoch=4).schedule is None, "constant: no schedule"


def test_checkpoint_of_another_run_is_ignored(tmp_path):
    path = tmp_path / "ckpt.pt"
    fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), path, "test data")
    assert fit(tiny_plan(epochs=1, lr=0.01), CPU_PROCESS, separable_data(), path, "test data").resumed_after_epoch == 0


def test_a_checkpoint_trained_on_other_data_is_set_aside_and_training_starts_over(tmp_path, caplog):
    path = tmp_path / "ckpt.pt"
    straight = fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), tmp_path / "straight.pt", "new data")
    fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), path, "old data")
    trained_on_old = path.read_bytes()
    with caplog.at_level("WARNING", logger="parabench.checkpoint"):
        rerun = fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), path, "new data")
    assert rerun.resumed_after_epoch == 0 and rerun.data_id == "new data"
    assert f"checkpoint {path} was trained on other data" in caplog.text and "starts from scratch" in caplog.text
    assert "old data" in caplog.text and "new data" in caplog.text
    assert (tmp_path / "ckpt.pt.other-data").read_bytes() == trained_on_old, "kept for a look, under another name"
    for name, value in straight.state_dict.items():
        torch.testing.assert_close(rerun.state_dict[name], value, rtol=0, atol=0)
    assert fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), path, "new data").resumed_after_epoch == 2


def test_train_pass_is_the_hand_written_loop_with_its_totals():
    """The loop's pass trains exactly as zero_grad/forward/backward/step would, and sums loss and hits right."""
    plan, data = tiny_plan(epochs=1), separable_data()
    indices = list(shard_batches(data.train_units, 16, 0, 1, seed=0, epoch=0))
    trainer = build_trainer(plan, CPU_PROCESS, steps_per_epoch=1)
    batches = [data.train_batch(0, chosen) for chosen in indices]
    totals = train_pass(trainer, data, batches, len(batches), StepClock([CPU_PROCESS.device], 0))

    torch.manual_seed(plan.settings.seed)
    model = plan.workload.build_model(plan.settings)
    by_hand = torch.optim.SGD(model.parameters(), lr=plan.lr, momentum=plan.settings.momentum)
    loss_sum, correct = 0.0, 0
    for chosen in indices:
        images, labels = data.train_images[chosen], data.train_labels[chosen]
        by_hand.zero_grad()
        outputs = model(images.float() / 255.0)
        loss = F.cross_entropy(outputs, labels)
        loss.backward()
        by_hand.step()
        loss_sum += loss.item() * len(labels)
        correct += (outputs.argmax(dim=1) == labels).sum().item()

    assert totals.units == len(batches) * 16
    assert totals.tallies == {"acc": correct}
    assert totals.loss == pytest.approx(loss_sum, rel=1e-6)
    for ours, hand in zip(trainer.parallel.module.parameters(), model.parameters()):
        torch.testing.assert_close(ours, hand, rtol=0, atol=0)


@pytest.mark.parametrize("damage", ["truncated", "not a checkpoint"])
def test_an_unreadable_checkpoint_is_set_aside_and_training_starts_over(tmp_path, damage, caplog):
    path = tmp_path / "ckpt.pt"
    straight = fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), tmp_path / "straight.pt", "test data")
    fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), path, "test data")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        torch.save([1, 2, 3], path)
    damaged = path.read_bytes()
    with caplog.at_level("WARNING", logger="parabench.checkpoint"):
        rerun = fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), path, "test data")
    assert rerun.resumed_after_epoch == 0
    assert f"checkpoint {path} is unreadable" in caplog.text and "starts from scratch" in caplog.text
    assert (tmp_path / "ckpt.pt.corrupt").read_bytes() == damaged, "kept for a look, under another name"
    for name, value in straight.state_dict.items():
        torch.testing.assert_close(rerun.state_dict[name], value, rtol=0, atol=0)


@pytest.mark.parametrize("fills", ["before the write", "during the write"])
def test_a_full_disk_at_a_checkpoint_keeps_the_previous_one_and_says_so(tmp_path, monkeypatch, fills):
    """Before: the folder has less room than the checkpoint needs (nothing is written). During: the write fails
    part-way with ENOSPC (the temporary file is removed). Either way DiskFull, and the rerun resumes after epoch 1."""
    path = tmp_path / "ckpt.pt"
    fit(tiny_plan(epochs=1), CPU_PROCESS, separable_data(), path, "test data")
    before = path.read_bytes()
    if fills == "before the write":
        monkeypatch.setattr(io.shutil, "disk_usage", lambda folder: shutil._ntuple_diskusage(10**6, 10**6 - 100, 100))
    else:

        def part_then_full(tmp: Path, data: bytes) -> None:
            tmp.open("wb").write(data[:100])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(Path, "write_bytes", part_then_full)
    with pytest.raises(DiskFull, match=r"checkpoint of epoch 2 was not saved .*no space left on the device") as full:
        fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), path, "test data")
    assert str(path) in str(full.value) and "the earlier ckpt.pt is kept as it was" in str(full.value)
    assert (fills == "before the write") == bool(
        re.search(r"needs [\d,]+ bytes, .* has 100 bytes free", str(full.value))
    )
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]
    monkeypatch.undo()
    assert fit(tiny_plan(epochs=2), CPU_PROCESS, separable_data(), path, "test data").resumed_after_epoch == 1


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_models_state_is_all_of_it(name):
    """Workload.model_holding builds on the meta device and loads the state dict: a buffer left out of it
    (persistent=False) would hold whatever memory it got, so no workload's model may have one."""
    with torch.device("meta"):
        model = WORKLOADS[name].build_model(load_params().settings(name))
    assert all(not module._non_persistent_buffers_set for module in model.modules())


def test_an_fp16_run_resumes_with_its_loss_scaler_to_the_uninterrupted_run(tmp_path):
    """16-mixed: the loss scaler's state (its scale, halved at each overflow) is in the checkpoint, so the resumed run
    skips the steps the uninterrupted one skips. This tiny run overflows at the first scale, 65536: a resume from a
    fresh scaler would skip a step more."""
    setup = cpu_setup(batch_shape=(16, 1, 28, 28)).model_copy(update={"precision": "16-mixed"})
    straight = fit(tiny_plan(epochs=2, setup=setup), CPU_PROCESS, separable_data(), tmp_path / "straight.pt", "data")
    crashed_path = tmp_path / "crashed.pt"
    fit(tiny_plan(epochs=1, setup=setup), CPU_PROCESS, separable_data(), crashed_path, "data")
    saved_scale = torch.load(crashed_path, weights_only=True)["scalers"][0]["scale"]
    assert saved_scale < 65536.0, "the first epoch overflowed at least once"
    resumed = fit(tiny_plan(epochs=2, setup=setup), CPU_PROCESS, separable_data(), crashed_path, "data")
    assert resumed.resumed_after_epoch == 1
    for name, value in straight.state_dict.items():
        torch.testing.assert_close(resumed.state_dict[name], value, rtol=1e-5, atol=1e-6)
