"""report/index.html: the answer on one page, every figure embedded, checked in a real browser where there is one."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from parabench.paths import REPORT_FILE
from parabench.report.page import commit, write_page
from tests.report_fixture import SWEEP, WORKLOADS, write_pipeline_outputs

ARTEFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The page written from a pipeline's outputs (tests/report_fixture.py), in a project folder of its own."""
    write_pipeline_outputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    write_page(REPORT_FILE, list(WORKLOADS), [SWEEP])
    return tmp_path / REPORT_FILE


def test_the_page_answers_each_seed_with_every_figure_embedded(page: Path):
    text = page.read_text()
    assert "AMD EPYC 9B14 (AVX512), 2 cores, no GPU, torch 2.14.1+cu130, CUDA 13.0" in text, "the machine"
    assert "commit unknown (not a git work tree)" in text
    for workload, seed in (("fashion_mnist", "003"), ("resnet50", "001")):
        assert f'<section id="{workload}"><h2>{workload}: ' in text and f"seed experiment {seed}" in text
    assert "<h2>Seed" not in text, "a section is headed by its workload, not by a document the user never saw"
    assert text.count('src="data:image/png;base64,') == 2 * len(WORKLOADS) + 1, "benchmark, epochs, the sweep"
    assert not re.search(r'(src|href)="(https?:)?//', text), "no request leaves the page"
    assert "The fastest strategy here is ddp" in text and "Sweep split_size: inprocess is fastest at" in text
    assert "dp</b>: needs CUDA; use ddp" in text, "a skipped strategy is named with its reason"
    assert "20% setting the cells up, 60% in timed steps (3 turns)." in text, "where the stage's time went"
    assert "1 (other programs)" in text, "ddp's disturbed step, left out"
    assert "<td>inprocess</td><td>4</td><td>250 ms</td><td>312 MB</td>" in text, "a sweep's speed and memory"
    assert "0.850 ± 0.007" in text and "+0.000 (95%: -0.004 to +0.004)" in text, "quality with its interval"
    assert "No quality to compare: the data are synthetic" in text
    assert text.count("What more devices would buy here (PREDICTED)") == 1, "fashion_mnist's; resnet50 has none yet"
    assert "<td>ddp</td>" in text and "exposed all-reduce is" in text and "infiniband400" in text
    assert "No two checked cells differ beyond the noise here." in text, "one checked cell: no order to keep"
    assert "single's global batch shared by the devices (strong scaling)" in text, "the rule the predictions follow"
    assert "The links measured here" in text and "<td>100 us</td>" in text and "0.041 GB/s at 4,096 B" in text
    assert "<th>CPU busy</th>" in text and "<td>100%</td>" in text, "how much of the all-reduce keeps a CPU busy"
    assert "Between the nodes" in text and "<td>300 us</td>" in text, "the probe between the nodes, beside it"
    assert "<td>ddp</td>" in text and "input 10% · compute 53% · communication 13% · optimizer 19% · idle 5%" in text, (
        "where ddp's step goes"
    )


def browser(*arguments: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Debian's chromium, headless, offline, with a fresh profile; its console messages on stderr."""
    return subprocess.run(
        ["chromium", *BROWSER_FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_the_page_opens_in_chromium_with_every_figure_shown_and_no_console_error(page: Path, tmp_path: Path):
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed (`apt-get install chromium`; .ci/run installs it)")
    loaded = browser("--dump-dom", page.as_uri(), profile=tmp_path / "profile")
    body = re.search(r"<body[^>]*>", loaded.stdout).group(0)
    assert 'data-figures="5"' in body and 'data-broken-figures="0"' in body, body
    errors = [line for line in loaded.stderr.splitlines() if re.search(r"CONSOLE:[3-9]\]|Uncaught", line)]
    assert errors == [], errors
    ARTEFACTS.mkdir(exist_ok=True)
    shot = ARTEFACTS / "report-page.png"
    browser(f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri(), profile=tmp_path / "profile")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_commit_is_marked_changed_by_an_edit_but_not_by_dvc_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def git(*arguments: str) -> None:
        subprocess.run(["git", *arguments], cwd=tmp_path, check=True, capture_output=True)

    for name in ("dvc.lock", "params.yaml"):
        (tmp_path / name).write_text("a\n")
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "project")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dvc.lock").write_text("rewritten by dvc repro\n")
    assert "uncommitted" not in commit() and len(commit()) >= 7
    (tmp_path / "params.yaml").write_text("edited\n")
    assert commit().endswith(" + uncommitted changes")
