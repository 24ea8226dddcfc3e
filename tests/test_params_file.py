"""A missing, empty or gutted params.yaml is named, with how to get it back, before DVC tries to parse dvc.yaml
(`make run` runs `python -m parabench.params_file` first); plain `dvc status` names the file too."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from parabench.errors import ConfigError
from parabench.params_file import READ_BY_DVC_YAML, check_for_dvc
from tests.conftest import PROJECT_ROOT, python_path


@pytest.mark.parametrize(
    ("contents", "names"),
    [
        (None, "not found"),
        ("", "the file is empty"),
        ("# every line a comment\n", "the file is empty"),
        ("inputs: [\n", "not valid YAML"),
        ("- a list\n", "expected a mapping"),
    ],
)
def test_a_params_file_dvc_cannot_read_is_named_with_how_to_restore_it(tmp_path: Path, contents, names):
    params = tmp_path / "params.yaml"
    if contents is not None:
        params.write_text(contents)
    with pytest.raises(ConfigError, match=names) as refused:
        check_for_dvc(params)
    assert str(params) in str(refused.value)
    if contents is None or "empty" in names:
        assert "git checkout params.yaml" in str(refused.value)


def test_the_keys_dvc_yaml_reads_are_named_when_missing(tmp_path: Path):
    params = yaml.safe_load((PROJECT_ROOT / "params.yaml").read_text())
    check_for_dvc(PROJECT_ROOT / "params.yaml")
    del params["inputs"], params["sweeps"]
    gutted = tmp_path / "params.yaml"
    gutted.write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError, match=r"no inputs, sweeps: dvc\.yaml reads them"):
        check_for_dvc(gutted)


def test_every_key_dvc_yaml_interpolates_is_checked():
    names = set(re.findall(r"\$\{(\w+)", (PROJECT_ROOT / "dvc.yaml").read_text()))
    top_level = yaml.safe_load((PROJECT_ROOT / "params.yaml").read_text())
    assert names & set(top_level) == set(READ_BY_DVC_YAML)


def test_the_check_is_one_line_and_exit_2(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "parabench.params_file"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": python_path()},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.startswith("error: params.yaml: not found in ")
    assert done.stderr.count("\n") == 1


def test_dvc_itself_names_a_missing_params_yaml(tmp_path: Path):
    project = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT / "check", project / "check", ignore=shutil.ignore_patterns("*.lock"))
    shutil.copy(PROJECT_ROOT / "dvc.yaml", project)
    dvc = [sys.executable, "-m", "dvc"]
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run([*dvc, "init", "-q"], cwd=project, check=True, env=env)
    status = subprocess.run([*dvc, "status"], cwd=project, capture_output=True, text=True, env=env, timeout=120)
    assert status.returncode != 0 and "'params.yaml' does not exist" in status.stderr, status.stderr
