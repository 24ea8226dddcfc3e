"""tools/install.py hands pip's own index settings to uv: every value of every key, PIP_* variables over the files."""

import importlib.util
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("install", PROJECT_ROOT / "tools" / "install.py")
install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(install)


def test_pip_s_settings_reach_uv_with_the_variables_over_the_files(tmp_path, monkeypatch):
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nextra-index-url = file:///a/simple file:///b/simple\nfind-links = /from-file\nconstraint = /c.txt\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_FIND_LINKS", "/from-env")
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    arguments = install.uv_arguments(install.pip_settings(Path(sys.executable)))
    assert arguments == [
        "--index-strategy",
        "unsafe-best-match",
        "--extra-index-url",
        "file:///a/simple",
        "--extra-index-url",
        "file:///b/simple",
        "--find-links",
        "/from-env",
        "--constraint",
        "/c.txt",
    ]
