"""A strategy answers questions about itself: no code outside strategies/ names one (a string literal equal to a
strategy's name), so adding a strategy touches its own file, the registry and its params and docs rows, nothing else;
and no code outside workloads/ and data/ names a workload.

The one place a name may stand elsewhere is a workload's Question: the strategies its source document compares
(seed 000 asks about DataParallel against DDP), which the report compares without knowing them; those names must be
registered strategies (tests/test_report_answers.py)."""

import ast
from pathlib import Path

from parabench.strategies.registry import STRATEGIES
from parabench.workloads import WORKLOADS

SOURCE = Path(__file__).resolve().parents[1] / "src" / "parabench"


def question_constants(tree: ast.AST) -> set[int]:
    """The ids of the constants inside a `Question(...)` declaration."""
    return {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Question"
        for inner in ast.walk(node)
    }


def name_literals(text: str, where: str, names: object = STRATEGIES) -> list[str]:
    """`where:line name` for each string constant of the module `text` among `names`, outside a Question."""
    tree = ast.parse(text)
    allowed = question_constants(tree)
    return [
        f"{where}:{node.lineno} {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
        if id(node) not in allowed
    ]


def test_no_strategy_is_named_outside_the_strategies_package():
    outside = [path for path in SOURCE.rglob("*.py") if "strategies" not in path.relative_to(SOURCE).parts]
    found = [line for path in outside for line in name_literals(path.read_text(), str(path.relative_to(SOURCE)))]
    assert found == [], "ask the strategy object (strategies/base.py, cost.py) instead of comparing its name"


def test_no_workload_is_named_outside_the_workloads_and_data_packages():
    outside = [path for path in SOURCE.rglob("*.py") if path.relative_to(SOURCE).parts[0] not in ("workloads", "data")]
    found = [line for path in outside for line in name_literals(path.read_text(), path.name, WORKLOADS)]
    assert found == [], "ask the workload object (workloads/contract.py) instead of comparing its name"


def test_the_count_sees_a_name_and_skips_a_question():
    text = 'if strategy == "ddp":\n    pass\nQUESTION = Question("000", "t", "q", compared=(("ddp", "dp"),))\n'
    assert name_literals(text, "module.py") == ["module.py:1 ddp"]
