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


LONGEST = ("test_pipeline_e2e.py", "test_pipeline_edits.py", "test_types.py")  # the DVC tests (minutes, mostly
# one process at a time), then mypy (half a minute from a cold cache), so none of them ends the run alone


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first: `make test` runs two workers (pytest-xdist, files in collection order), so the two
    DVC tests start at once, one on each, mypy follows, and the rest fills in beside them instead of after them."""
    items.sort(key=lambda item: item.path.name not in LONGEST)


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
