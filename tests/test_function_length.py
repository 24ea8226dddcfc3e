"""No function of the package is over 50 lines, docstring included: a longer one holds more than one idea."""

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "parabench"
LONGEST = 50


def long_functions(text: str, where: str) -> list[str]:
    """`where:line name (n lines)` for each function of the module `text` over LONGEST lines."""
    return [
        f"{where}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LONGEST
    ]


def test_no_function_is_over_50_lines():
    found = [line for path in SOURCE.rglob("*.py") for line in long_functions(path.read_text(), path.name)]
    assert found == [], "split each into functions of one idea"


def test_the_count_sees_a_long_function():
    text = "def short():\n    pass\n\n\ndef long():\n" + "    x = 1\n" * 50
    assert long_functions(text, "m.py") == ["m.py:5 long (51 lines)"]
