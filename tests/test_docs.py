"""README.md and docs/ name what exists: every linked page, every source file, and every params key set with -S."""

import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from dvc.utils.hydra import apply_overrides

from parabench.config import load_params
from parabench.engine.check import check_all

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCE_ROOTS = ("src/", "stages/", "tests/", "tools/", "benchmarks/", "examples/", "docs/", ".dvc/", ".ci/")
LINK = re.compile(r"\]\(([^)#\s]+)")
CODE_PATH = re.compile(r"`([\w./-]+\.(?:py|md|yaml|json|sh))`")
OVERRIDE = re.compile(r"-S '?~?(\+?)([A-Za-z_][\w.]*)=")  # '+' adds a key: its parent must exist
EXPERIMENT = re.compile(r"^ *dvc exp run (.+)$", re.MULTILINE)


def documented_experiments() -> list[tuple[str, list[str]]]:
    """Every `dvc exp run` line of README.md and docs/ that sets params (lines continued with a backslash joined):
    the page, and the overrides as `-S` hands them to DVC."""
    found = []
    for page in PAGES:
        text = page.read_text().replace("\\\n", " ")
        for line in EXPERIMENT.findall(text):
            words = shlex.split(line, comments=True)
            overrides = [words[index + 1] for index, word in enumerate(words[:-1]) if word in ("-S", "--set-param")]
            if overrides:
                found.append((page.relative_to(ROOT).as_posix(), overrides))
    return found


def params_has(params: dict, dotted: str) -> bool:
    """Whether a dotted key names a value in params.yaml (a sweep's or scale's entries included)."""
    node = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_page_names_files_links_and_keys_that_exist(page):
    text = page.read_text()
    missing_links = [
        link
        for link in LINK.findall(text)
        if not link.startswith(("http:", "https:", "file:")) and not (page.parent / link).exists()
    ]
    assert not missing_links, f"{page.name}: links to nothing: {missing_links}"
    code = [path for path in CODE_PATH.findall(text) if path.startswith(SOURCE_ROOTS) and "<" not in path]
    assert not [path for path in code if not (ROOT / path).exists()], f"{page.name}: names files that do not exist"
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    unknown = [
        key for added, key in OVERRIDE.findall(text) if not params_has(params, key.rpartition(".")[0] if added else key)
    ]
    assert not unknown, f"{page.name}: sets params keys params.yaml does not have: {unknown}"


def test_the_readme_fits_on_a_page_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10_000, "README.md: at most about 10 KB; the rest belongs in docs/"
    linked = {Path(link).name for link in LINK.findall(readme)}
    assert {page.name for page in PAGES[1:]} <= linked, "every docs page is reachable from the README"


@pytest.mark.parametrize(("page", "overrides"), documented_experiments(), ids=lambda value: str(value)[:60])
def test_every_documented_experiment_passes_the_check(page, overrides, tmp_path, monkeypatch):
    """Applied with DVC's own `-S` parser (Hydra's override grammar), each experiment the docs show is one the check
    stage lets through on this machine's CPU: every run planned, every benchmark and sweep cell planned or skipped
    with its reason. A state dict an experiment names is the user's own file: here an empty one stands for it."""
    monkeypatch.chdir(tmp_path)
    for weights in (value.partition("=")[2] for value in overrides if value.endswith(".pth")):
        Path(weights).parent.mkdir(parents=True, exist_ok=True)
        Path(weights).touch()
    params_file = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", params_file)
    apply_overrides(params_file, overrides)
    params = yaml.safe_load(params_file.read_text())
    params["hardware"]["accelerator"] = "cpu"
    params_file.write_text(yaml.safe_dump(params))
    check_all(load_params(params_file))
