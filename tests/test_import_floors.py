"""The five floors (0 to 4) of docs/architecture.md: imports only go down, no two parts import each other (no circle).

Floor 0 holds the small shared pieces; 1 the bottom (runtime, data, models); 2 what is applied to models
(workloads, strategies); 3 the params schema and the engine; 4 the report. Every import statement counts,
function-level ones included.
"""

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "parabench"
FLOORS = {
    "__init__": 0,
    "errors": 0,
    "io": 0,
    "paths": 0,
    "cli": 0,
    "params_file": 0,
    "batch": 0,
    "stats": 0,
    "records": 0,
    "buckets": 0,
    "runtime": 1,
    "data": 1,
    "models": 1,
    "workloads": 2,
    "strategies": 2,
    "config": 3,
    "params_problems": 3,
    "prediction": 3,
    "engine": 3,
    "report": 4,
}


def part_of(module: str) -> str:
    """The floor unit a dotted parabench module belongs to: its first component below `parabench`."""
    return module.split(".")[1] if "." in module else "__init__"


def imports(path: Path) -> set[str]:
    """The parabench modules a source file imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "parabench" or name.startswith("parabench.")}


def edges(source: Path = SOURCE) -> dict[str, set[str]]:
    """Part -> the other parts it imports."""
    graph: dict[str, set[str]] = {}
    for path in source.rglob("*.py"):
        relative = path.relative_to(source).with_suffix("")
        here = part_of("parabench." + ".".join(relative.parts))
        graph.setdefault(here, set()).update(part_of(name) for name in imports(path) if part_of(name) != here)
    return graph


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a part to a part on a higher floor."""
    return [
        f"{part} (floor {FLOORS[part]}) imports {target} (floor {FLOORS[target]})"
        for part, targets in graph.items()
        for target in targets
        if FLOORS[target] > FLOORS[part]
    ]


def circles(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of parts that import each other."""
    return sorted({tuple(sorted((a, b))) for a, targets in graph.items() for b in targets if a in graph.get(b, ())})


def test_every_part_has_a_floor():
    assert set(edges()) <= set(FLOORS), f"give these a floor: {sorted(set(edges()) - set(FLOORS))}"


def test_imports_only_go_down_and_no_two_parts_import_each_other():
    graph = edges()
    assert not upward_imports(graph), "\n".join(upward_imports(graph))
    assert not circles(graph)


def test_strategies_see_batches_and_runtime_never_engine_or_workloads():
    assert not {"engine", "workloads", "config"} & edges()["strategies"]


def test_an_upward_import_and_a_circle_are_caught(tmp_path):
    """The checks themselves can fail: a runtime module importing the engine is reported, and so is the circle."""
    (tmp_path / "runtime").mkdir()
    (tmp_path / "engine").mkdir()
    (tmp_path / "runtime" / "bad.py").write_text("from parabench.engine.training import fit\n")
    (tmp_path / "engine" / "loop.py").write_text("import parabench.runtime.bad\n")
    graph = edges(tmp_path)
    assert upward_imports(graph) == ["runtime (floor 1) imports engine (floor 3)"]
    assert circles(graph) == [("engine", "runtime")]
