"""The check stage's memory: a fingerprint of everything its verdict and its records depend on, so that a `dvc repro`
with nothing changed skips importing torch and planning every run, and repeats the last passing check's findings.

The fingerprint covers params.yaml, every source file of the project, the environment variables the stage started
with, the machine as the OS and the installed packages describe it (CPU model and vector flags, usable cores, the
Python and the platform, every installed distribution's version, the NVIDIA driver and the GPUs it shows), the
records the check wrote, and the local data folders those records describe. It errs on the side of a whole check:
any difference, or a memo that cannot be read, runs it. The memo lives in DVC's own scratch folder (.dvc/tmp,
ignored by git and DVC).
"""

import hashlib
import json
import logging
import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from parabench.data.source import folder_fingerprint
from parabench.io import write_json
from parabench.runtime.cpu import cpu_flags, cpu_model, usable_cores
from parabench.runtime.gpu_signs import gpu_signs, nvidia_driver_version

log = logging.getLogger("parabench.check")
MEMO_FILE = Path(".dvc/tmp/parabench-check.json")
INPUT_FILES = ("params.yaml",)
CODE_FOLDERS = ("src", "stages")
# Set for each command by the shell, by make (and the Makefile's DVC switch) or by a virtual environment's activate
# script, and read by nothing here: `make run`, then `dvc repro` typed in an activated shell, differ in these alone.
UNREAD_VARIABLES = frozenset(
    {"_", "OLDPWD", "SHLVL", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKE_TERMOUT", "MAKE_TERMERR", "DVC_NO_ANALYTICS"}
    | {"VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT", "PS1"}
)
FOLDER_FIELDS = ("files", "bytes", "digest")  # what folder_fingerprint adds to a source record


def kept_variables(environment: Mapping[str, str]) -> dict[str, str]:
    """The environment variables the fingerprint covers: all but UNREAD_VARIABLES."""
    return {name: value for name, value in environment.items() if name not in UNREAD_VARIABLES}


# The environment as this process started (the stage script imports this module first): importing torch sets
# variables of its own (TORCHINDUCTOR_CACHE_DIR), which the next stage process does not start with.
STARTING_ENVIRONMENT = kept_variables(os.environ)


def machine_facts() -> dict[str, Any]:
    """What the OS and the installed packages say about the machine, read without importing torch."""
    return {
        "cpu_model": cpu_model(),
        "cpu_vector_flags": cpu_flags(),
        "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else usable_cores(),
        "python": sys.version,
        "platform": platform.platform(),
        "packages": sorted(f"{dist.metadata['Name']}=={dist.version}" for dist in metadata.distributions()),
        "nvidia_driver": nvidia_driver_version(),
        "gpu_signs": gpu_signs(),
    }


def fingerprint(records: list[Path]) -> str:
    """A digest of the check's inputs and of `records`, the files it wrote."""
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode() + data)

    for name in INPUT_FILES:
        add(name, Path(name).read_bytes())
    for folder in CODE_FOLDERS:
        for path in sorted(Path(folder).rglob("*.py")):
            add(path.as_posix(), path.read_bytes())
    add("environment", json.dumps(STARTING_ENVIRONMENT, sort_keys=True).encode())
    add("machine", json.dumps(machine_facts(), sort_keys=True).encode())
    for record in records:
        add(record.as_posix(), record.read_bytes())
    return digest.hexdigest()


def folders_unchanged(records: list[Path]) -> bool:
    """Whether every local data folder a source record describes still has the files the record counted."""
    for record in records:
        content = json.loads(record.read_text())
        if all(field in content for field in FOLDER_FIELDS):
            now = folder_fingerprint(Path(content["source"]))
            if any(now[field] != content[field] for field in FOLDER_FIELDS):
                return False
    return True


def remember(records: list[Path], findings: list[logging.LogRecord]) -> None:
    """After a passing check: its fingerprint, the records it wrote, and what it logged at warning level or above."""
    write_json(
        MEMO_FILE,
        {
            "fingerprint": fingerprint(records),
            "records": [record.as_posix() for record in records],
            "findings": [(finding.levelno, finding.name, finding.getMessage()) for finding in findings],
        },
    )


def recall() -> bool:
    """If nothing the last passing check depended on has changed, log its findings again and return True."""
    try:
        memo = json.loads(MEMO_FILE.read_text())
        records = [Path(record) for record in memo["records"]]
        if memo["fingerprint"] != fingerprint(records) or not folders_unchanged(records):
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    for level, name, message in memo["findings"]:
        logging.getLogger(name).log(level, message)
    log.info("params.yaml, the code, the environment and the machine are as at the last passing check: it stands")
    return True
