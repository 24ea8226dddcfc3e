"""Shared fixtures: the project root, a valid params.yaml to break one key at a time, a local HTTP server; and the
order of the run: the two DVC test files first."""

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.http_server import FileServer, running_file_server

PROJECT_ROOT = Path(__file__).resolve().parents[1]
PIPELINE_FILES = ("dvc.yaml", "check/dvc.yaml")  # the pipeline, and its head in a file of its own (it says why)
CHECK_STAGE = "check/dvc.yaml:check"  # the check stage, as DVC names a stage outside the top dvc.yaml


def pipeline_stages() -> dict[str, dict[str, Any]]:
    """Every stage of the project's pipeline files as written (a foreach or matrix stage unexpanded), by the name
    DVC gives it: `train` in dvc.yaml, CHECK_STAGE in check/dvc.yaml."""
    stages = {}
    for file in PIPELINE_FILES:
        prefix = "" if file == "dvc.yaml" else f"{file}:"
        for name, stage in yaml.safe_load((PROJECT_ROOT / file).read_text())["stages"].items():
            stages[prefix + name] = stage
    return stages


def python_path(root: Path = PROJECT_ROOT) -> str:
    """PYTHONPATH for a subprocess of the project's code: its src first, then whatever PYTHONPATH this process had
    (where an environment keeps its packages there, as a borrowed GPU machine did, they stay importable)."""
    return os.pathsep.join([str(root / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])


# The files that take longest, longest first, as `make test` timed them with inductor's cache cold (CI's case; seconds
# of the two workers' time on a 2-core EPYC, AVX2 forced): the end-to-end DVC test (260-300), the torchrun jobs (150),
# the DVC edits (80), the compiled pipeline and blocks (about 90 each), the probe and the two-node script (30 each),
# mypy (15-30), every strategy's training (20).
LONGEST = (
    "test_pipeline_e2e.py",
    "test_torchrun_jobs.py",
    "test_pipeline_edits.py",
    "test_model_pipeline_equivalence.py",
    "test_compile.py",
    "test_probe.py",
    "test_slurm_script.py",
    "test_types.py",
    "test_every_strategy_trains.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, the rest in their order: `make test` runs two workers (pytest-xdist's loadfile: a
    worker takes the next file whenever it has two tests or fewer left), so the end-to-end test holds one worker
    while the other works through the next longest, and short files fill in at the end instead of a long one
    running alone at the end (test_torchrun_jobs.py, 150 s, was 70th of 74 alphabetically)."""
    items.sort(key=lambda item: LONGEST.index(item.path.name) if item.path.name in LONGEST else len(LONGEST))


@pytest.fixture
def base_params() -> dict[str, Any]:
    """The committed params.yaml as a dict, on the CPU (hardware.accelerator: cpu, where the shipped file says auto):
    a test plans the same on a machine with a GPU as on one without; a test of a CUDA path sets cuda itself."""
    params = copy.deepcopy(yaml.safe_load((PROJECT_ROOT / "params.yaml").read_text()))
    params["hardware"]["accelerator"] = "cpu"
    return params


@pytest.fixture
def write_params(tmp_path: Path):
    """Write a params dict to a temporary params.yaml and return its path."""

    def write(params: dict[str, Any]) -> Path:
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params))
        return path

    return write


@pytest.fixture
def server() -> Iterator[FileServer]:
    """A local HTTP server on 127.0.0.1 for download tests; add routes to it."""
    with running_file_server() as state:
        yield state
