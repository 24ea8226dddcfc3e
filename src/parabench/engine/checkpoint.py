"""Per-epoch checkpoints: save after each epoch, resume a crashed run where it stopped."""

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import torch

from parabench.engine.distributed import Process, broadcast_object
from parabench.io import write_atomic

log = logging.getLogger("parabench.checkpoint")


def fingerprint(description: dict[str, Any]) -> str:
    """A short hash of everything that makes two runs the same run."""
    return hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()[:16]


def save(path: Path, state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (main process only)."""
    write_atomic(path, lambda tmp: torch.save(state, tmp))


def load(path: Path, expected_fingerprint: str, process: Process) -> dict[str, Any] | None:
    """The checkpoint of this very run if there is one (read by rank 0, shared with every rank)."""
    state = None
    if process.is_main and path.exists():
        candidate = torch.load(path, map_location="cpu", weights_only=False)
        if candidate.get("fingerprint") == expected_fingerprint:
            state = candidate
            log.info("resuming from %s after epoch %d", path, candidate["epoch"])
        else:
            log.info("ignoring %s: it belongs to a run with other settings", path)
    return broadcast_object(state)  # type: ignore[return-value]
