"""mypy, strict on src/ (pyproject.toml's [tool.mypy]), as part of the test run: make test runs it beside the tests."""

import subprocess
import sys

from tests.conftest import PROJECT_ROOT


def test_the_package_type_checks_under_mypy_strict():
    checked = subprocess.run([sys.executable, "-m", "mypy"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert checked.returncode == 0, f"mypy found problems:\n{checked.stdout}{checked.stderr}"
    assert "Success: no issues found" in checked.stdout
