"""Per-epoch checkpoints: save after each epoch, resume a crashed run where it stopped, never another run's."""

import hashlib
import io
import json
import logging
import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from parabench.engine.plan import RunPlan
from parabench.errors import DataError, DiskFull, ParabenchError
from parabench.io import changed_behind_dvc, write_bytes
from parabench.runtime.collectives import broadcast_object
from parabench.runtime.cpu import cpu_model
from parabench.runtime.environment import gpu_names
from parabench.runtime.process import Process

log = logging.getLogger("parabench.checkpoint")


def run_description(plan: RunPlan) -> dict[str, Any]:
    """Everything that shapes the run's epochs and their timings; runs with equal descriptions share checkpoints.

    `epochs` is left out on purpose when the learning rate does not depend on it (constant, or a schedule counted
    in steps): epoch k then does the same work whatever the total (data order seeded per epoch), so a longer run
    may continue a shorter one's checkpoint. A cosine schedule ends at the last epoch, so there it is in. The machine
    is in, down to the CPU model, its vector ISA and, on CUDA, the GPUs' names: a resumed run keeps the step times
    of its checkpoint, which must have been measured alike.
    """
    machine = plan.machine
    return {
        **plan.describe().model_dump(),
        "machine": {
            "accelerator": machine.accelerator,
            "backend": machine.backend,
            "cores": machine.cores,
            "threads": plan.threads,
            "cpu_model": cpu_model(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "gpus": gpu_names() if machine.accelerator == "cuda" else [],
        },
        "settings": plan.settings.model_dump(exclude={"epochs"} if plan.settings.lr_schedule == "constant" else set()),
        **{section: getattr(plan.setup, section).model_dump() for section in plan.strategy.options},
    }


def fingerprint(description: dict[str, Any]) -> str:
    """A short hash of everything that makes two runs the same run."""
    return hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:16]


UNREADABLE = (RuntimeError, EOFError, ValueError, KeyError, pickle.UnpicklingError, zipfile.BadZipFile)


def write_tensors(path: Path, contents: object) -> None:
    """Save tensors (and plain values) to `path` atomically, once the folder is known to have room for them.

    torch.save into memory first: writing straight to a full disk fails inside torch's zip writer with a RuntimeError
    that names no file ("unexpected pos ..."); written as bytes, a full disk is DiskFull, naming the bytes needed."""
    buffer = io.BytesIO()
    torch.save(contents, buffer)
    write_bytes(path, buffer.getbuffer())


class Unreadable(Exception):
    """A file that does not load as saved tensors (cut, garbled, another kind of object); the message says why."""


def load_tensors(path: Path) -> dict[str, Any]:
    """Tensors saved by write_tensors, read as plain data (weights_only); Unreadable, saying why, where they do not
    load."""
    if torch.distributed.is_available():
        # fsdp's optimiser state holds DTensors, which weights_only loads only once this import has registered them
        # (and their DeviceMesh); torchvision happens to import it today, which a checkpoint must not count on.
        from torch.distributed import tensor  # noqa: F401
    try:
        contents = torch.load(path, map_location="cpu", weights_only=True)
    except UNREADABLE as err:
        first = str(err).strip().splitlines()[0].split(". ")[0] if str(err).strip() else ""
        raise Unreadable(f"{type(err).__name__}: {first}") from None
    if not isinstance(contents, dict):
        raise Unreadable(f"holds a {type(contents).__name__}, not saved tensors")
    return contents


def read_tensors(path: Path) -> dict[str, Any]:
    """A stage's saved tensors (a model); one that does not load is a DataError naming it and how to restore it."""
    try:
        return load_tensors(path)
    except Unreadable as err:
        raise DataError(f"{path}: does not load ({err}); {changed_behind_dvc(path)}") from None


def save(path: Path, state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (main process only): tensors, numbers, strings, lists and dicts only.

    A write that fails (a full disk, a folder not writable) leaves the previous checkpoint as it was, and says so."""
    try:
        write_tensors(path, state)
    except DiskFull as err:
        raise DiskFull(
            f"the checkpoint of epoch {state['epoch']} was not saved (a rerun resumes after the last one saved): {err}"
        ) from None
    except OSError as err:
        kept = "the previous checkpoint is intact" if path.exists() else "no earlier checkpoint exists"
        raise ParabenchError(
            f"could not write the checkpoint of epoch {state['epoch']} to {path}: {err}; {kept}. Fix the folder's "
            "permissions and run again: training resumes after the last checkpoint written."
        ) from err


def load(path: Path, expected_fingerprint: str, data_id: str, process: Process) -> dict[str, Any] | None:
    """The checkpoint of this very run on this very data if there is one (read by rank 0 as plain data, shared
    with every rank). One trained on other data (`data_id`, a digest of what the run reads) is set aside to
    PATH.other-data, saying so, and training starts from scratch: a model never outlives its data."""
    state = None
    if process.is_main and path.exists():
        candidate = _read_or_set_aside(path)
        if candidate is None:
            pass
        elif candidate.get("fingerprint") != expected_fingerprint:
            log.info("ignoring %s: it belongs to a run with other settings", path)
        elif candidate.get("data") != data_id:
            aside = _set_aside(path, "other-data")
            log.warning(
                "checkpoint %s was trained on other data (digest %s; this run reads %s): moved it to %s and "
                "training starts from scratch",
                path,
                candidate.get("data", "not recorded"),
                data_id,
                aside,
            )
        else:
            state = candidate
            log.info("resuming from %s after epoch %d", path, candidate["epoch"])
    return broadcast_object(state)


def _set_aside(path: Path, why: str) -> Path:
    """Move a checkpoint that must not be resumed to PATH.<why>, where a user can still find it."""
    aside = path.with_name(f"{path.name}.{why}")
    os.replace(path, aside)
    return aside


def _read_or_set_aside(path: Path) -> dict[str, Any] | None:
    """The checkpoint's contents, or None after moving an unreadable one (truncated, corrupt) to PATH.corrupt."""
    try:
        return load_tensors(path)
    except Unreadable as err:
        aside = _set_aside(path, "corrupt")
        log.warning(
            "checkpoint %s is unreadable (%s); moved it to %s and training starts from scratch", path, err, aside
        )
        return None
