"""What is recorded beside every number: the CPU model and vector ISA, the GPUs and their software, the settings that
decide whether CUDA runs repeat exactly, and how busy the machine was with others."""

import os
import time
from types import SimpleNamespace

import pytest
import torch

from parabench.runtime import environment, gpu_signs, load
from parabench.runtime.environment import describe, machine_identity, machine_line
from tests.setups import cpu_setup


def test_every_environment_block_names_the_cpu_model_and_its_vector_isa():
    identity = machine_identity()
    assert identity["cpu_model"] and identity["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert identity["torch"] == torch.__version__ and identity["cores"] >= 1
    block = describe(cpu_setup(devices=2).machine, processes=2, threads=1, distributed=True)
    assert {"cpu_model", "cpu_capability", "cpu_vector_flags", "backend", "threads_per_process"} <= set(block)
    assert block["backend"] == "gloo"


def test_a_node_without_usable_cuda_records_no_gpu_and_no_gpu_software(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(gpu_signs, "NVIDIA_GPUS_FOLDER", tmp_path / "no-driver")
    monkeypatch.setattr(gpu_signs, "NVIDIA_VERSION_FILE", tmp_path / "no-version")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("SLURM_GPUS_ON_NODE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    identity = machine_identity()
    assert (identity["gpus"], identity["gpus_torch_cannot_use"]) == ([], [])
    assert (identity["nvidia_driver"], identity["cudnn"], identity["nccl"]) == (None, None, None)


def test_gpus_torch_cannot_use_are_recorded_and_the_ones_it_uses_are_not(tmp_path, monkeypatch):
    (tmp_path / "0000:3b:00.0").mkdir()
    monkeypatch.setattr(gpu_signs, "NVIDIA_GPUS_FOLDER", tmp_path)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert environment.gpus_torch_cannot_use() == [f"{tmp_path}: a GPU at 0000:3b:00.0"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert environment.gpus_torch_cannot_use() == []


def test_each_gpu_is_recorded_with_its_compute_capability_and_memory(monkeypatch):
    names = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB"]
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: names[index])
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: [(9, 0), (8, 0)][index])
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: SimpleNamespace(total_memory=index + 1))
    assert environment.gpus() == [
        {"name": names[0], "compute_capability": "9.0", "memory_bytes": 1},
        {"name": names[1], "compute_capability": "8.0", "memory_bytes": 2},
    ]
    assert environment.gpu_names() == names


@pytest.mark.parametrize(
    "first_line, version",
    [
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023", "535.104.05"),
        ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build", "550.54.14"),
        ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  470.82  Thu Oct 14 10:24:40 UTC 2021", "470.82"),
        ("NVRM version: something new", None),
    ],
)
def test_the_driver_version_is_read_from_the_drivers_version_file(tmp_path, monkeypatch, first_line, version):
    version_file = tmp_path / "version"
    version_file.write_text(f"{first_line}\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    monkeypatch.setattr(gpu_signs, "NVIDIA_VERSION_FILE", version_file)
    assert gpu_signs.nvidia_driver_version() == version


def test_the_settings_that_decide_whether_cuda_runs_repeat_are_recorded(monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    settings = machine_identity()["reproducibility"]
    assert settings == {
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "matmul_fp32_precision": torch.backends.cuda.matmul.fp32_precision,
        "cudnn_conv_fp32_precision": torch.backends.cudnn.conv.fp32_precision,
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cublas_workspace_config": ":4096:8",
    }


def test_a_tf32_flag_torch_refuses_to_read_is_recorded_as_none(monkeypatch):
    """torch raises on the older TF32 flags once the newer fp32_precision API has set them: the record must not."""

    def refuse() -> str:
        raise RuntimeError("you have used mix of the legacy and new APIs to set the TF32 status")

    monkeypatch.setattr(torch, "get_float32_matmul_precision", refuse)
    assert environment.reproducibility_settings()["float32_matmul_precision"] is None


def mark(wall: float, machine: float, own: float) -> load.LoadMark:
    return load.LoadMark(wall=wall, machine_cpu=machine, own_cpu=own)


def test_other_programs_share_is_the_machines_busy_time_not_ours(monkeypatch):
    monkeypatch.setattr(load.os, "cpu_count", lambda: 2)
    # 10 s on 2 cores = 20 CPU-seconds; the machine was busy 15, of which we used 11: others took 4, a fifth.
    assert load.other_cpu_share(mark(0, 100, 5), mark(10, 115, 16), own_cpu_seconds_all_ranks=11) == pytest.approx(0.2)
    assert load.other_cpu_share(mark(0, 100, 5), mark(10, 110, 15), own_cpu_seconds_all_ranks=10) == 0.0
    assert load.other_cpu_share(mark(0, 100, 0), mark(0.2, 101, 0), 0) is None, "too short for clock ticks"
    assert load.other_cpu_share(mark(0, None, 0), mark(10, None, 0), 0) is None, "no /proc/stat"


def test_a_busy_machine_is_seen(monkeypatch):
    """Burn CPU in this process but do not count it as ours: the share must show it."""
    start = load.mark()
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline:
        pass
    share = load.other_cpu_share(start, load.mark(), own_cpu_seconds_all_ranks=0.0)
    if share is None:
        pytest.skip("no /proc/stat on this system")
    assert share > 0.5 / (os.cpu_count() or 1), "one core of the machine's was busy"


def test_the_machine_line_names_cpu_isa_cores_gpus_and_versions():
    identity = {
        "cpu_model": "AMD EPYC 9B14",
        "cpu_capability": "AVX512",
        "cores": 2,
        "torch": "2.14.1+cu130",
        "cuda": "13.0",
        "gpus": [],
    }
    assert machine_line(identity) == "AMD EPYC 9B14 (AVX512), 2 cores, no GPU, torch 2.14.1+cu130, CUDA 13.0"
    four = [{"name": "NVIDIA H100"}] * 4
    assert "4 x NVIDIA H100" in machine_line({**identity, "gpus": four})
    assert "NVIDIA H100, NVIDIA A100" in machine_line(
        {**identity, "gpus": [{"name": "NVIDIA H100"}, {"name": "NVIDIA A100"}]}
    )


def test_the_allocator_is_recorded_beside_every_figure(monkeypatch):
    """A preloaded tcmalloc moved single's steps by 10% here: the identity says which allocator ran, so that a change
    re-times the benchmark."""
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    assert machine_identity()["allocator"] == "glibc"
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4")
    assert machine_identity()["allocator"] == "libtcmalloc_minimal.so.4"
