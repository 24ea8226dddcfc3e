"""README.md, docs/ and params.yaml name what exists: every linked page, every source file and folder, every params
key, every `make` target, every module `python -m` runs and every script `python` runs. docs/ is a manual within
its budget: no page carries a dated entry."""

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
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
PARAMS_FILE = ROOT / "params.yaml"
REFERENCE_FIGURES = ROOT / "docs" / "reference-figures.md"
DOCS_BUDGET, REFERENCE_FIGURES_BUDGET = 100_000, 15_000  # bytes

SOURCE_ROOTS = ("src/", "stages/", "tests/", "tools/", "benchmarks/", "examples/", "docs/", ".dvc/", ".ci/")
LINK = re.compile(r"\]\(([^)#\s]+)")
CODE_PATH = re.compile(r"`([\w./-]+\.(?:py|md|yaml|json|sh))`")
# A path named anywhere, in backticks or not, under a folder of the project's own (not .dvc/, which holds DVC's
# scratch files at run time): `src/parabench/prediction/`, docs/strategies.md. One with a placeholder or a wildcard
# (`tests/test_*equivalence.py`, `results/<w>.json`) names no one file, and a sentence's full stop ends a path.
BARE_PATH = re.compile(
    r"(?<![\w./-])((?:src|stages|tests|tools|benchmarks|examples|docs|\.ci)/[\w./-]*[\w/])(?![\w/*<{-]|\.[\w/])"
)
OVERRIDE = re.compile(r"-S '?~?(\+?)([A-Za-z_][\w.]*)=")  # '+' adds a key: its parent must exist
EXPERIMENT = re.compile(r"^ *dvc exp run (.+)$", re.MULTILINE)
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`]+)`")
# Commands, in code: `make run`, `python -m parabench.records`, `python benchmarks/backtest.py --help`.
MAKE = re.compile(r"(?:^|&&|;|\|)[ \t]*(?:\$[ \t]+)?make[ \t]+([a-z][\w-]*)", re.MULTILINE)
MODULE = re.compile(r"\bpython3?\s+-m\s+(parabench(?:\.\w+)*)")
SCRIPT = re.compile(r"\bpython3?\s+((?:benchmarks|stages|tools)/[\w./-]*\w)")
# A params key in code, alone or given a value: `hardware.devices`, `partition.balance: documented`.
DOTTED_KEY = re.compile(r"([a-z_]\w*(?:\.\w+)+)(?:[ \t]*[:=].*)?", re.DOTALL)
FILE_SUFFIXES = (".py", ".md", ".yaml", ".json", ".sh", ".csv", ".png", ".html", ".pt", ".pth", ".gz", ".zip", ".pkl")
MAKE_TARGET = re.compile(r"^([A-Za-z][\w.-]*)[ \t]*:(?!=)", re.MULTILINE)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def load_params_file() -> dict:
    return yaml.safe_load(PARAMS_FILE.read_text())


def params_comments() -> str:
    """Every comment of params.yaml, a line each: what it says beside the keys."""
    return "\n".join(line.partition("#")[2] for line in PARAMS_FILE.read_text().splitlines() if "#" in line)


def params_has(params: dict, dotted: str) -> bool:
    """Whether a dotted key names a value in params.yaml (a sweep's or scale's entries included)."""
    node = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def code_spans(text: str) -> list[str]:
    """What a page writes as code: each fenced block, then each inline span of the text around them."""
    return [*FENCE.findall(text), *INLINE_CODE.findall(FENCE.sub("", text))]


def missing_links(text: str, folder: Path) -> list[str]:
    """Markdown links, relative to the page's folder, to nothing."""
    return [
        link
        for link in LINK.findall(text)
        if not link.startswith(("http:", "https:", "file:")) and not (folder / link).exists()
    ]


def missing_paths(text: str) -> list[str]:
    """The project's files and folders a text names that do not exist."""
    named = [path for path in CODE_PATH.findall(text) if path.startswith(SOURCE_ROOTS) and "<" not in path]
    named += BARE_PATH.findall(text)
    return sorted({path for path in named if not (ROOT / path).exists()})


def make_targets() -> set[str]:
    return set(MAKE_TARGET.findall((ROOT / "Makefile").read_text()))


def module_exists(module: str) -> bool:
    """Whether `python -m <module>` finds a module of the project: a file, or a package with a __main__."""
    path = ROOT / "src" / Path(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__main__.py").is_file()


def missing_commands(text: str) -> list[str]:
    """The commands a text writes as code that name nothing: a `make` target the Makefile lacks, a module `python -m`
    cannot find, a script `python` cannot open."""
    missing = []
    targets = make_targets()
    for code in code_spans(text):
        missing += [f"make {target}" for target in MAKE.findall(code) if target not in targets]
        missing += [f"python -m {module}" for module in MODULE.findall(code) if not module_exists(module)]
        missing += [f"python {script}" for script in SCRIPT.findall(code) if not (ROOT / script).is_file()]
    return sorted(set(missing))


def unknown_keys(text: str, params: dict) -> list[str]:
    """The params keys a text sets with -S, or names as code, that params.yaml does not have. A code span names a key
    when its first part is one of params.yaml's sections (`hardware.devices`, `fsdp.sharding: full`), a file name
    aside (`pipeline.py`)."""
    keys = [key.rpartition(".")[0] if added else key for added, key in OVERRIDE.findall(text)]
    for code in code_spans(text):
        named = DOTTED_KEY.fullmatch(code.strip())
        if named and named[1].split(".")[0] in params and not named[1].endswith(FILE_SUFFIXES):
            keys.append(named[1])
    return sorted({key for key in keys if not params_has(params, key)})


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


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_page_names_files_links_commands_and_keys_that_exist(page):
    text = page.read_text()
    assert not missing_links(text, page.parent), f"{page.name}: links to nothing: {missing_links(text, page.parent)}"
    assert not missing_paths(text), f"{page.name}: names files that do not exist: {missing_paths(text)}"
    assert not missing_commands(text), f"{page.name}: names commands that run nothing: {missing_commands(text)}"
    unknown = unknown_keys(text, load_params_file())
    assert not unknown, f"{page.name}: names params keys params.yaml does not have: {unknown}"


def test_params_yaml_names_files_commands_and_keys_that_exist():
    """Its values (inputs.resnet50's file) and its comments: the pages they point to, the commands and -S keys."""
    params, comments = load_params_file(), params_comments()
    assert not missing_paths(PARAMS_FILE.read_text()), f"params.yaml names: {missing_paths(PARAMS_FILE.read_text())}"
    assert not missing_commands(comments), f"params.yaml's comments name: {missing_commands(comments)}"
    assert not unknown_keys(comments, params), f"params.yaml's comments name: {unknown_keys(comments, params)}"


@pytest.mark.parametrize(
    ("check", "text", "missing"),
    [
        ("links", "[the guide](no-such-page.md), [data](data.md)", ["no-such-page.md"]),
        (
            "paths",
            "see docs/no-such-page.md. `src/parabench/no_such.py`, src/parabench/ and `tests/test_*x.py`",
            [
                "docs/no-such-page.md",
                "src/parabench/no_such.py",
            ],
        ),
        ("paths", "# the reason: docs/no-such-figures.md, src/parabench/config.py", ["docs/no-such-figures.md"]),
        ("commands", "`make deploy` then `make run`", ["make deploy"]),
        ("commands", "```bash\nmake test && make lint   # then\n```", ["make lint"]),
        (
            "commands",
            "`python -m parabench.no_such_module` `python -m parabench.records`",
            ["python -m parabench.no_such_module"],
        ),
        (
            "commands",
            "`python benchmarks/no_such.py --rounds 3`, `python stages/train.py`",
            ["python benchmarks/no_such.py"],
        ),
        (
            "commands",
            "`python tools/no_such.py` `python stages/no_such.py`",
            [
                "python stages/no_such.py",
                "python tools/no_such.py",
            ],
        ),
        ("keys", "`dvc exp run -S hardware.no_such_key=4 -S strategy=ddp`", ["hardware.no_such_key"]),
        ("keys", "`-S '+no_such_section.sweep={workload: hotdog}'`", ["no_such_section"]),
        (
            "keys",
            "`benchmark.no_such_cap`, `fsdp.sharding: full`, `pipeline.py`, `stats.estimates_agree`",
            ["benchmark.no_such_cap"],
        ),
    ],
)
def test_each_check_reports_a_made_up_name(check, text, missing):
    """Each check can fail: fed a name that exists nowhere beside names that do, it reports that name alone."""
    found = {
        "links": lambda: missing_links(text, ROOT / "docs"),
        "paths": lambda: missing_paths(text),
        "commands": lambda: missing_commands(text),
        "keys": lambda: unknown_keys(text, load_params_file()),
    }[check]()
    assert found == missing


def test_the_readme_fits_on_a_page_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 10_000, "README.md: at most about 10 KB; the rest belongs in docs/"
    linked = {Path(link).name for link in LINK.findall(readme)}
    assert {page.name for page in DOCS} <= linked, "every docs page is reachable from the README"


def test_docs_is_a_manual_within_its_budget():
    """docs/ describes the code as it is: no page carries a dated entry (git history keeps them), the reference
    figures fit one page (each named by its machine and commit, not a date), and the whole within its bytes."""
    dated = {page.name: DATE.findall(page.read_text()) for page in PAGES if DATE.search(page.read_text())}
    assert not dated, f"dated entries belong in git history, not in the manual: {dated}"
    assert len(REFERENCE_FIGURES.read_bytes()) <= REFERENCE_FIGURES_BUDGET, "docs/reference-figures.md: 15 KB at most"
    total = sum(len(page.read_bytes()) for page in DOCS)
    assert total <= DOCS_BUDGET, f"docs/*.md hold {total:,} bytes: at most {DOCS_BUDGET:,}"


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
    shutil.copy(PARAMS_FILE, params_file)
    apply_overrides(params_file, overrides)
    params = yaml.safe_load(params_file.read_text())
    params["hardware"]["accelerator"] = "cpu"
    params_file.write_text(yaml.safe_dump(params))
    check_all(load_params(params_file))
