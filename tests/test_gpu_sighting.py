"""A node's GPUs are seen even when torch cannot use them, and `accelerator: auto` then warns that it uses the CPU."""

from pathlib import Path

import pytest
import torch

from parabench.runtime import gpu_signs as sighting
from parabench.runtime.gpu_signs import gpu_signs
from parabench.runtime.hardware import Hardware, resolve, warn_of_unused_gpus

A100 = "NVIDIA A100-SXM4-80GB"


@pytest.fixture(autouse=True)
def bare_node(tmp_path, monkeypatch):
    """No driver folder, no GPU variables, no nvidia-smi and no usable CUDA: each test adds the signs it needs."""
    monkeypatch.setattr(sighting, "NVIDIA_GPUS_FOLDER", tmp_path / "no-driver")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_GPUS_ON_NODE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    warn_of_unused_gpus.cache_clear()  # it warns once per process


def driver_folder(root: Path, gpus: dict[str, str | None]) -> Path:
    """/proc/driver/nvidia/gpus as the driver writes it: one folder per PCI address, with the model (None: no file)."""
    for address, model in gpus.items():
        (root / address).mkdir(parents=True)
        if model is not None:
            (root / address / "information").write_text(f"Model: \t\t {model}\nIRQ:   \t\t 140\n")
    return root


def fake_nvidia_smi(folder: Path, script: str) -> Path:
    """An executable `nvidia-smi` in `folder` running `script` (sh), and a file it touches when it is run."""
    folder.mkdir(exist_ok=True)
    called = folder / "called"
    command = folder / "nvidia-smi"
    command.write_text(f"#!/bin/sh\nPATH=/usr/bin:/bin\ntouch {called}\n{script}\n")
    command.chmod(0o755)
    return called


def auto_hardware(accelerator: str = "auto") -> Hardware:
    """A hardware section with every value automatic, the accelerator as given."""
    return Hardware(
        accelerator=accelerator,
        devices="auto",
        nodes=1,
        threads="auto",
        backend="auto",
        max_restarts=0,
        oversubscribe=False,
        timeout_s=600.0,
        rendezvous=None,
        join_timeout_s=600.0,
    )


def test_a_bare_node_shows_no_gpu():
    assert gpu_signs({}) == []


def test_the_driver_folders_name_each_gpu_and_its_address(tmp_path, monkeypatch):
    root = driver_folder(tmp_path / "gpus", {"0000:3b:00.0": A100, "0000:5e:00.0": None})
    monkeypatch.setattr(sighting, "NVIDIA_GPUS_FOLDER", root)
    assert gpu_signs({}) == [f"{root}: {A100} at 0000:3b:00.0", f"{root}: a GPU at 0000:5e:00.0"]


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({"CUDA_VISIBLE_DEVICES": "0,1"}, ["CUDA_VISIBLE_DEVICES=0,1"]),
        ({"CUDA_VISIBLE_DEVICES": ""}, []),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, []),
        ({"CUDA_VISIBLE_DEVICES": "None"}, []),
        ({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, []),
        ({"SLURM_GPUS_ON_NODE": "4"}, ["SLURM_GPUS_ON_NODE=4"]),
        ({"SLURM_GPUS_ON_NODE": "0"}, []),
        ({"SLURM_GPUS_ON_NODE": "four"}, []),
    ],
)
def test_the_variables_of_a_gpu_job_are_signs_and_the_ones_hiding_every_gpu_are_not(environ, expected):
    assert gpu_signs(environ) == expected


def test_nvidia_smi_is_asked_only_when_nothing_cheaper_shows_a_gpu(tmp_path):
    called = fake_nvidia_smi(tmp_path / "empty-bin", "echo 'GPU 0: NVIDIA H100 (UUID: GPU-1234)'; echo 'MIG 1g.10gb'")
    assert gpu_signs({}) == ["nvidia-smi -L: GPU 0: NVIDIA H100 (UUID: GPU-1234)"]
    called.unlink()
    assert gpu_signs({"SLURM_GPUS_ON_NODE": "1"}) == ["SLURM_GPUS_ON_NODE=1"]
    assert not called.exists(), "a cheaper sign was there: no process started"


def test_an_nvidia_smi_that_hangs_or_fails_shows_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(sighting, "NVIDIA_SMI_TIMEOUT_S", 0.2)
    fake_nvidia_smi(tmp_path / "empty-bin", "echo 'GPU 0: NVIDIA H100 (UUID: GPU-1234)'; exec sleep 5")
    assert gpu_signs({}) == [], "past its time: its output is not trusted"
    fake_nvidia_smi(tmp_path / "empty-bin", "echo 'NVIDIA-SMI has failed: driver/library version mismatch'; exit 9")
    assert gpu_signs({}) == []


def test_auto_on_a_node_with_gpus_torch_cannot_use_trains_on_the_cpu_and_says_so(tmp_path, monkeypatch, caplog):
    root = driver_folder(tmp_path / "gpus", {"0000:3b:00.0": A100})
    monkeypatch.setattr(sighting, "NVIDIA_GPUS_FOLDER", root)
    with caplog.at_level("WARNING", logger="parabench.hardware"):
        machine = resolve(auto_hardware())
    assert (machine.accelerator, machine.backend) == ("cpu", "gloo")
    [warning] = [record for record in caplog.records if record.name == "parabench.hardware"]
    message = warning.getMessage()
    assert warning.levelname == "WARNING" and "trains on the CPU" in message
    assert f"{A100} at 0000:3b:00.0" in message, "what was seen"
    assert torch.__version__ in message and str(torch.version.cuda or "CPU-only") in message, "which torch"
    assert "hardware.accelerator: cpu to silence this" in message and "cuda to make it an error" in message


@pytest.mark.parametrize("accelerator, environ", [("cpu", {"CUDA_VISIBLE_DEVICES": "0"}), ("auto", {})])
def test_no_warning_when_the_cpu_is_chosen_or_no_gpu_is_seen(accelerator, environ, monkeypatch, caplog):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level("WARNING", logger="parabench.hardware"):
        assert resolve(auto_hardware(accelerator)).accelerator == "cpu"
    assert not [record for record in caplog.records if record.name == "parabench.hardware"]
