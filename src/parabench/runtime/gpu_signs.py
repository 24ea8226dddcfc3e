"""Whether this node has NVIDIA GPUs, whatever the installed torch can do with them (the driver, the job's variables,
nvidia-smi), and which NVIDIA driver it runs: read without torch."""

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

NVIDIA_VERSION_FILE = Path("/proc/driver/nvidia/version")  # the loaded NVIDIA kernel driver's version line
NVIDIA_GPUS_FOLDER = Path("/proc/driver/nvidia/gpus")  # the NVIDIA driver's one folder per GPU, by PCI address
NVIDIA_SMI_TIMEOUT_S = 3.0
NO_DEVICES = {"", "-1", "none", "nodevfiles"}  # CUDA_VISIBLE_DEVICES values that hide every GPU


def gpu_signs(environ: Mapping[str, str] = os.environ) -> list[str]:
    """What shows that this node has NVIDIA GPUs, whatever torch can do with them: one line per sign, none if none.

    The driver's GPU folders, CUDA_VISIBLE_DEVICES, SLURM_GPUS_ON_NODE; `nvidia-smi -L` only when those show nothing.
    """
    signs = [f"{NVIDIA_GPUS_FOLDER}: {gpu}" for gpu in driver_gpus()]
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip().lower() not in NO_DEVICES:
        signs.append(f"CUDA_VISIBLE_DEVICES={visible}")
    slurm_gpus = environ.get("SLURM_GPUS_ON_NODE", "")
    if slurm_gpus.isdigit() and int(slurm_gpus) > 0:
        signs.append(f"SLURM_GPUS_ON_NODE={slurm_gpus}")
    return signs or [f"nvidia-smi -L: {line}" for line in nvidia_smi_gpus()]


def driver_gpus() -> list[str]:
    """The GPUs the NVIDIA kernel driver has found: each folder's model and PCI address."""
    try:
        folders = sorted(NVIDIA_GPUS_FOLDER.iterdir())
    except OSError:  # no NVIDIA driver loaded
        return []
    return [f"{driver_model(folder)} at {folder.name}" for folder in folders]


def driver_model(gpu_folder: Path) -> str:
    """The `Model:` line of a driver GPU folder's `information` file, or "a GPU" where it cannot be read."""
    try:
        for line in (gpu_folder / "information").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model":
                return value.strip()
    except OSError:
        pass
    return "a GPU"


def nvidia_smi_gpus() -> list[str]:
    """The lines of `nvidia-smi -L` where it is installed and answers in time, else none."""
    command = shutil.which("nvidia-smi")
    if command is None:
        return []
    try:
        listing = subprocess.run(
            [command, "-L"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in listing.stdout.splitlines() if line.startswith("GPU ")]


def nvidia_driver_version() -> str | None:
    """The loaded NVIDIA kernel driver's version (like 550.54.14), or None without one."""
    try:
        first_line = NVIDIA_VERSION_FILE.read_text(encoding="utf-8").partition("\n")[0]
    except OSError:
        return None
    version = re.search(r"\b\d+\.\d+(?:\.\d+)?\b", first_line)
    return version.group() if version else None
