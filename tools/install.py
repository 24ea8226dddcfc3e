"""Install the project (`-e .[test]`) into a virtual environment: with uv when pip can fetch it, else with pip.

uv unpacks torch's wheels and compiles their bytecode in parallel (on a 2-core VM about 60 s, where pip takes 150).
It does not read pip's configuration, so pip's own index settings (find-links, index URLs, constraints, certificate:
`pip config list`, files and PIP_* variables alike) are passed on, and uv picks the best version across every index,
as pip does. Anything that stops uv (no network to fetch it, a resolver difference) falls back to pip, so setup never
depends on uv. Run by `make setup`: `python tools/install.py .venv`.
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
REQUIREMENT = "-e.[test]"
# pip's key -> uv's option; pip separates several values with whitespace, uv takes the option once per value
OPTIONS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def pip_settings(python: Path) -> dict[str, str]:
    """pip's configuration as `pip config list` resolves it (files, then PIP_* variables): key -> value."""
    listed = subprocess.run([str(python), "-m", "pip", "config", "list"], capture_output=True, text=True)
    settings: dict[str, str] = {}
    # PIP_* variables (listed as `:env:.key`) override the files, so they are read last
    for line in sorted(listed.stdout.splitlines(), key=lambda line: line.startswith(":env:")):
        name, _, value = line.partition("=")
        settings[name.rpartition(".")[2]] = " ".join(shlex.split(value))  # values are printed quoted
    return settings


def uv_arguments(settings: dict[str, str]) -> list[str]:
    """uv pip install's options carrying pip's index settings."""
    arguments = ["--index-strategy", "unsafe-best-match"]
    for key, option in OPTIONS.items():
        for value in settings.get(key, "").split():
            arguments += [option, value]
    return arguments


def install_with_uv(python: Path, settings: dict[str, str]) -> bool:
    """True when uv installed the project; False (having said why) when it could not."""
    quiet = ["--quiet", "--disable-pip-version-check"]
    if subprocess.run([str(python), "-m", "pip", "install", *quiet, "uv"]).returncode != 0:
        print("install: uv could not be installed; installing with pip", file=sys.stderr)
        return False
    uv = python.parent / "uv"
    env = dict(os.environ)
    if "cert" in settings:
        env.setdefault("SSL_CERT_FILE", settings["cert"])
    # --compile-bytecode: as pip does; else, where PYTHONDONTWRITEBYTECODE is set, every process compiles torch again
    done = subprocess.run(
        [
            str(uv),
            "pip",
            "install",
            "--quiet",
            "--compile-bytecode",
            "--python",
            str(python),
            *uv_arguments(settings),
            REQUIREMENT,
        ],
        cwd=PROJECT,
        env=env,
    )
    if done.returncode != 0:
        print("install: uv could not install the project; installing with pip", file=sys.stderr)
    return done.returncode == 0


def main() -> None:
    python = Path(sys.argv[1]) / "bin" / "python"
    if not install_with_uv(python, pip_settings(python)):
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", REQUIREMENT], cwd=PROJECT, check=True)


if __name__ == "__main__":
    main()
