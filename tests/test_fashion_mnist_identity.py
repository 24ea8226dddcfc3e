"""The port of fashion_mnist onto the workload contract changed nothing: same seed and params, same parameters.

tests/fixtures/fashion_mnist_before_contract.pt was written by the code before the contract (commit 1a003f9)
on an AVX-512 CPU, 1 thread: its loop `fit` trained the d2l ResNet-18 (width 4) under `single` for 2 epochs of 2
steps (32 brightness-labelled images, batch 16, SGD lr 0.005, momentum 0.5, weight decay 0.001, seed 0) and
saved the final state dict (parameters and BatchNorm buffers) and the per-epoch loss and accuracies.

Tolerance: the same run of the old code on AVX2 and on scalar kernels (ATEN_CPU_CAPABILITY=avx2 / default)
moved the parameters by at most 1.1e-6 and 6.9e-5; a real change is far larger (momentum 0 instead of 0.5
moves them by 5.9e-3). So parameters must agree within atol 2e-4 on any CPU. Not bit for bit: the same vector ISA
does not pin the kernels (an Intel Xeon with AVX-512 differs in the last bits from the AMD EPYC with AVX-512 that
wrote the fixture), and the fixture records no CPU model to compare with.
"""

from pathlib import Path

import pytest
import torch

from parabench.engine.training import fit
from parabench.workloads.fashion_mnist import FashionMnistData
from tests.setups import CPU_PROCESS, tiny_plan

FIXTURE = Path(__file__).parent / "fixtures" / "fashion_mnist_before_contract.pt"


def brightness_images(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The fixture's data: images whose label is written in their brightness (the old tests' generator)."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (count,), generator=generator)
    images = (torch.rand(count, 1, 28, 28, generator=generator) * 60 + labels.view(-1, 1, 1, 1) * 150).to(torch.uint8)
    return images, labels


def test_single_reaches_the_parameters_of_the_code_before_the_contract(tmp_path):
    torch.set_num_threads(1)
    before = torch.load(FIXTURE, weights_only=True)
    data = FashionMnistData(*brightness_images(32, 0), *brightness_images(64, 1), 32, "the fixture's images")
    plan = tiny_plan(epochs=2, lr=0.005, momentum=0.5, weight_decay=0.001)
    result = fit(plan, CPU_PROCESS, data, tmp_path / "ckpt.pt", "test data")
    assert list(result.state_dict) == list(before["state_dict"])
    for name, value in before["state_dict"].items():
        tolerance = {"rtol": 0, "atol": 2e-4}
        torch.testing.assert_close(result.state_dict[name], value, **tolerance, msg=lambda m, name=name: f"{name}: {m}")
    for ours, theirs in zip(result.history, before["history"], strict=True):
        assert ours["epoch"] == theirs["epoch"]
        assert ours["train_acc"] == theirs["train_acc"] and ours["test_acc"] == theirs["test_acc"]
        assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-4)
