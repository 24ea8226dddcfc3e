"""params.yaml as a file: read as plain YAML, with one sentence when it is missing, empty, not YAML or lacks what
dvc.yaml reads from it. `make run` checks it so before `dvc repro`, because DVC parses dvc.yaml (which interpolates
params.yaml) before any stage runs: `python -m parabench.params_file`."""

from pathlib import Path
from typing import Any

import yaml

from parabench.cli import stage_main
from parabench.errors import ConfigError

PARAMS_FILE = Path("params.yaml")
RESTORE = "restore the project's own with `git checkout params.yaml`"
# the top-level keys dvc.yaml interpolates (${inputs}, ${scale}, ${sweeps}): without one, DVC cannot read dvc.yaml
READ_BY_DVC_YAML = ("inputs", "scale", "sweeps")


def read_raw_params(path: Path = PARAMS_FILE) -> dict[str, Any]:
    """params.yaml as plain YAML values, not validated yet."""
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: not found in {Path.cwd()}; it holds every setting of the pipeline. Run from the project root, "
            f"or {RESTORE}."
        ) from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if raw is None:
        raise ConfigError(f"{path}: the file is empty; {RESTORE}.")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level, found {type(raw).__name__}.")
    return raw


def check_for_dvc(path: Path = PARAMS_FILE) -> None:
    """That DVC can read dvc.yaml with this params.yaml: the file is there, is YAML, and has the keys dvc.yaml reads.
    Every value is validated by the pipeline's first stage (check)."""
    missing = [key for key in READ_BY_DVC_YAML if key not in read_raw_params(path)]
    if missing:
        them = "them" if len(missing) > 1 else "it"
        raise ConfigError(
            f"{path}: no {', '.join(missing)}: dvc.yaml reads {them} to lay out the stages; add {them} back as "
            f"`git show HEAD:params.yaml` has {them}, or {RESTORE}."
        )


if __name__ == "__main__":
    stage_main(check_for_dvc)
