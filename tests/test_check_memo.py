"""The check stage's memo: the last passing check stands while nothing it depends on changes (params.yaml, the code,
the environment variables, the records it wrote, a local data folder they describe), and repeats its findings; any
change, or a memo that cannot be read, runs the whole check. Through DVC: tests/test_pipeline_e2e.py."""

import json
import logging
from pathlib import Path

import pytest

from parabench.data.source import folder_fingerprint
from parabench.engine import check_memo
from parabench.engine.check_memo import MEMO_FILE, kept_variables, recall, remember


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A project folder as the check leaves it: params.yaml, code, DVC's scratch folder and two records, one of a
    local data folder. Returns the records."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("strategy: ddp\n")
    for code in ("src/parabench/a.py", "stages/check.py"):
        (tmp_path / code).parent.mkdir(parents=True)
        (tmp_path / code).write_text("x = 1\n")
    MEMO_FILE.parent.mkdir(parents=True)
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "a.jpg").write_bytes(b"jpeg")
    records = [Path("results/environment.json"), Path("results/sources/hotdog.json")]
    records[0].parent.mkdir(parents=True)
    records[0].write_text('{"cores": 2}\n')
    records[1].parent.mkdir()
    records[1].write_text(json.dumps({"source": "photos", **folder_fingerprint(Path("photos"))}))
    return records


def finding(message: str) -> logging.LogRecord:
    return logging.LogRecord("parabench.cells", logging.WARNING, __file__, 1, message, None, None)


def test_an_unchanged_project_recalls_the_check_and_repeats_its_findings(project, caplog):
    remember(project, [finding("dp on fashion_mnist skipped: needs CUDA GPUs")])
    with caplog.at_level(logging.INFO):
        assert recall()
    assert ("parabench.cells", logging.WARNING, "dp on fashion_mnist skipped: needs CUDA GPUs") in caplog.record_tuples
    assert "as at the last passing check" in caplog.text


@pytest.mark.parametrize(
    "change",
    [
        lambda: Path("params.yaml").write_text("strategy: ddp\nhardware: {devics: 4}\n"),  # a key DVC does not watch
        lambda: Path("src/parabench/a.py").write_text("x = 2\n"),
        lambda: Path("stages/new.py").write_text(""),
        lambda: Path("results/environment.json").write_text('{"cores": 64}\n'),  # checked out from another machine
        lambda: Path("results/sources/hotdog.json").unlink(),
        lambda: Path("photos/b.jpg").write_bytes(b"another photo"),
        lambda: Path("photos/a.jpg").write_bytes(b"a longer photo"),
        lambda: MEMO_FILE.write_text("{not json"),
        lambda: MEMO_FILE.unlink(),
    ],
    ids=[
        "params",
        "code",
        "new-code",
        "record",
        "missing-record",
        "new-photo",
        "changed-photo",
        "corrupt-memo",
        "no-memo",
    ],
)
def test_any_change_runs_the_whole_check(project, change):
    remember(project, [])
    change()
    assert not recall()


def test_an_environment_variable_or_the_machine_runs_the_whole_check(project, monkeypatch):
    remember(project, [])
    started_with = dict(check_memo.STARTING_ENVIRONMENT)
    other = "default" if started_with.get("ATEN_CPU_CAPABILITY") == "avx2" else "avx2"
    monkeypatch.setitem(check_memo.STARTING_ENVIRONMENT, "ATEN_CPU_CAPABILITY", other)
    assert not recall()
    monkeypatch.setattr(check_memo, "STARTING_ENVIRONMENT", started_with)
    assert recall()
    monkeypatch.setattr(check_memo, "gpu_signs", lambda: ["/proc/driver/nvidia/gpus: NVIDIA H100 at 0000:3b:00.0"])
    assert not recall()


def test_what_make_and_an_activated_virtual_environment_set_leaves_the_memo_standing(project, monkeypatch):
    """`make run` starts DVC with make's variables, a user's shell with activate's: neither changes a result."""
    shell = {"PATH": "/project/.venv/bin:/usr/bin", "ATEN_CPU_CAPABILITY": "avx2", "SHLVL": "2"}
    under_make = {**shell, "MAKEFLAGS": "", "MAKELEVEL": "1", "MFLAGS": "", "SHLVL": "3", "DVC_NO_ANALYTICS": "1"}
    activated = {**shell, "VIRTUAL_ENV": "/project/.venv", "VIRTUAL_ENV_PROMPT": "(.venv) "}
    assert kept_variables(under_make) == kept_variables(activated) == {k: v for k, v in shell.items() if k != "SHLVL"}
    monkeypatch.setattr(check_memo, "STARTING_ENVIRONMENT", kept_variables(under_make))
    remember(project, [])
    monkeypatch.setattr(check_memo, "STARTING_ENVIRONMENT", kept_variables(activated))
    assert recall()
    monkeypatch.setattr(check_memo, "STARTING_ENVIRONMENT", kept_variables({**activated, "OMP_NUM_THREADS": "1"}))
    assert not recall(), "a variable that changes how torch runs is still compared"
