"""Each pipeline stage (dvc.yaml, check/dvc.yaml) depends on exactly the code it runs: no stale outputs when that code
changes, no re-run when other code does.

A stage's code is its script (`cmd: python stages/<name>.py ...`) and the static import closure of that script within
the parabench package, read with `ast` (nothing is imported): every `import parabench.x` and `from parabench.x import
y` (y counts when it is a submodule), function-level ones included; importing a module runs every parent package's
__init__.py; and a string literal "parabench.<dotted>" naming a module file (WORKER_MODULE, JOIN_MODULE,
CELL_WORKER_MODULE: modules started as `python -m` subprocesses) counts as an import of it. Logger names
(`getLogger("parabench.data")`) do not.

A code dep may be a file of the closure, or a directory whose every .py file is in the closure.
"""

import ast
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import pipeline_stages

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src" / "parabench"
MODULE_NAME = re.compile(r"parabench(\.[A-Za-z_]\w*)*")
SCRIPT = re.compile(r"^python (stages/\w+\.py)(\s|$)")
CODE_ROOTS = ("src/", "stages/")


def rel(path: Path) -> str:
    """A path as dvc.yaml spells it: relative to the project root, with forward slashes."""
    return path.relative_to(ROOT).as_posix()


def module_file(name: str) -> Path | None:
    """The source file of a dotted parabench module (a package's __init__.py), or None when there is none."""
    base = SOURCE.parent.joinpath(*name.split("."))
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    """The dotted name of a module file below src/."""
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def logger_names(tree: ast.AST) -> set[int]:
    """The ids of string constants passed to getLogger: logger names, not modules."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called == "getLogger":
                found.update(id(arg) for arg in node.args)
    return found


@cache
def imported_modules(path: Path) -> frozenset[str]:
    """The dotted parabench modules one source file imports (or starts by module name)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    loggers = logger_names(tree)
    found: set[str] = set()

    def package_of_relative(level: int) -> str:
        here = module_name(path).split(".")
        if path.name != "__init__.py":
            here = here[:-1]
        return ".".join(here[: len(here) - (level - 1)])

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if MODULE_NAME.fullmatch(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(filter(None, (package_of_relative(node.level), base)))
            if not MODULE_NAME.fullmatch(base):
                continue
            found.add(base)
            # `from parabench.pkg import name`: name is a submodule, or an attribute of pkg
            found.update(f"{base}.{alias.name}" for alias in node.names if module_file(f"{base}.{alias.name}"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in loggers
            and MODULE_NAME.fullmatch(node.value)
            and module_file(node.value)
        ):
            found.add(node.value)
    missing = sorted(name for name in found if module_file(name) is None)
    assert not missing, f"{rel(path)} imports parabench modules this test cannot find: {missing}"
    return frozenset(found)


def with_parents(name: str) -> list[str]:
    """A module and every package above it, whose __init__.py runs first: parabench, parabench.a, parabench.a.b."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


@cache
def closure(script: str) -> frozenset[str]:
    """The stage script and every parabench module file it runs, as project-relative paths."""
    start = ROOT / script
    files: set[Path] = {start}
    todo = [start]
    while todo:
        for name in imported_modules(todo.pop()):
            for module in with_parents(name):
                found = module_file(module)
                assert found is not None, f"{script}: no source file for {module}"
                if found not in files:
                    files.add(found)
                    todo.append(found)
    return frozenset(rel(path) for path in files)


def python_files(dep: str) -> set[str]:
    """The .py files a dep path covers: itself, or every one below a directory."""
    path = ROOT / dep
    if path.is_dir():
        return {rel(found) for found in path.rglob("*.py") if "__pycache__" not in found.parts}
    return {dep} if path.is_file() else set()


def covers(dep: str, file: str) -> bool:
    return file == dep or file.startswith(dep.rstrip("/") + "/")


def minimal_deps(files: frozenset[str]) -> list[str]:
    """The fewest code dep paths covering exactly `files`: the highest directories wholly in it, then the rest."""
    directories: set[str] = set()
    for file in files:
        for parent in Path(file).parents:
            if parent.as_posix() in (".", "stages", "src"):
                break
            if python_files(parent.as_posix()) <= files:
                directories.add(parent.as_posix())
    top = {d for d in directories if not any(covers(other, d) and other != d for other in directories)}
    return sorted(top | {file for file in files if not any(covers(d, file) for d in top)})


def dvc_stages() -> dict[str, dict[str, Any]]:
    """Every stage of the pipeline files: name -> its body (a foreach or matrix stage's `do`, or the stage itself)."""
    return {name: stage.get("do", stage) for name, stage in pipeline_stages().items()}


def script_of(name: str, body: dict[str, Any]) -> str:
    match = SCRIPT.match(body["cmd"])
    assert match, f"stage {name}: cmd {body['cmd']!r} is not `python stages/<name>.py ...`"
    return match.group(1)


def code_deps(body: dict[str, Any]) -> list[str]:
    """The stage's deps on code (src/, stages/), leaving out interpolated ones (${item}: a workload's data)."""
    deps = [dep if isinstance(dep, str) else next(iter(dep)) for dep in body.get("deps", [])]
    return [dep for dep in deps if dep.startswith(CODE_ROOTS) and "${" not in dep]


STAGES = dvc_stages()


@pytest.mark.parametrize("name", sorted(STAGES))
def test_every_file_the_stage_runs_is_a_dep(name):
    body = STAGES[name]
    files, deps = closure(script_of(name, body)), code_deps(body)
    uncovered = sorted(file for file in files if not any(covers(dep, file) for dep in deps))
    assert not uncovered, (
        f"stage {name}: its outputs go stale when these files it runs change, for they are not among its deps: "
        f"{uncovered}; code deps that match its imports: {minimal_deps(files)}"
    )


@pytest.mark.parametrize("name", sorted(STAGES))
def test_no_dep_is_code_the_stage_does_not_run(name):
    body = STAGES[name]
    files, deps = closure(script_of(name, body)), code_deps(body)
    unused = sorted(dep for dep in deps if not python_files(dep) & files)
    assert not unused, f"stage {name}: deps it never runs (or that do not exist): {unused}"
    partial = {dep: sorted(python_files(dep) - files) for dep in deps if (ROOT / dep).is_dir()}
    partial = {dep: extra for dep, extra in partial.items() if extra}
    assert not partial, (
        f"stage {name}: directory deps holding files it never runs, whose edits would re-run it needlessly: "
        f"{partial}; list the files it runs instead: {minimal_deps(files)}"
    )
    assert len(set(deps)) == len(deps), f"stage {name}: a dep listed twice: {deps}"


SUMMARISING = {"speedup", "sweep_summary", "report"}  # they read what other stages measured, measure nothing


def test_an_edit_of_how_results_are_summarised_re_runs_no_stage_that_trains_or_times():
    """With every stage's deps its closure (above), a stage re-runs on an edit of report/ only if it runs report/."""
    runs_report = {
        name
        for name, body in STAGES.items()
        if any(file.startswith("src/parabench/report/") for file in closure(script_of(name, body)))
    }
    assert runs_report == SUMMARISING, "predict runs prediction/, which report/ only renders"
    for name in ("train", "reference", "evaluate", "benchmark", "sweep"):
        assert name in STAGES, name


def test_the_closure_follows_submodule_imports_subprocess_modules_and_parent_packages(tmp_path):
    """The reader itself: `from parabench.strategies import ddp` is strategies/ddp.py; WORKER_MODULE's string starts
    engine/worker.py; a submodule runs its packages' __init__.py; a logger name is no import."""
    files = closure("stages/train.py")
    assert "src/parabench/strategies/ddp.py" in files
    assert "src/parabench/engine/worker.py" in files and "src/parabench/engine/join.py" in files
    assert {"src/parabench/__init__.py", "src/parabench/engine/__init__.py"} <= files
    source = tmp_path / "example.py"
    source.write_text(
        'import logging\nlog = logging.getLogger("parabench.data")\nMODULE = "parabench.engine.join"\n'
        "from parabench.strategies import ddp, STRATEGIES\n"
    )
    assert imported_modules(source) == {"parabench.engine.join", "parabench.strategies", "parabench.strategies.ddp"}
    assert minimal_deps(frozenset(python_files("src/parabench/report"))) == ["src/parabench/report"]
