"""dvc.yaml is the map a user reads: every path the code writes (paths.py) is one dvc.yaml declares, and back."""

import re
from pathlib import Path
from typing import Any

import yaml

from parabench import paths
from parabench.config import DATASET_NAMES, load_params
from parabench.data.registry import DATASETS
from parabench.workloads import WORKLOADS
from tests.conftest import pipeline_stages

ROOT = Path(__file__).resolve().parents[1]


def dvc_yaml() -> dict[str, Any]:
    """The project's dvc.yaml, as parsed YAML."""
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())


def dvc_yaml_vars(spec: dict[str, Any]) -> dict[str, Any]:
    """The values dvc.yaml defines in its `vars` (beside the files it names, params.yaml)."""
    return {key: value for entry in spec["vars"] if isinstance(entry, dict) for key, value in entry.items()}


def expand(text: str, values: dict[str, Any]) -> str:
    """dvc.yaml's ${name} and ${item.field} interpolation, for the names this test supplies."""

    def value(match: re.Match[str]) -> str:
        name, *fields = match.group(1).split(".")
        found = values[name]
        for field in fields:
            found = found[field]
        return str(found)

    return re.sub(r"\$\{([^}]+)\}", value, text)


def stage_instances() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Every stage of the pipeline files as DVC names it (foreach and matrix expanded for params.yaml:
    `train@hotdog`), with its body and the values its ${...} interpolate."""
    spec, params = dvc_yaml(), load_params()
    variables = {"datasets": dvc_yaml_vars(spec)["datasets"], "scale": params.scale}
    instances = []
    for name, stage in pipeline_stages().items():
        body = stage.get("do", stage)
        if "foreach" in stage:
            sweeps = {name: sweep.model_dump() for name, sweep in params.sweeps.items()}
            collection = {"${inputs}": params.inputs, "${sweeps}": sweeps}[stage["foreach"]]
            bindings = [(f"{name}@{key}", {"key": key, "item": item}) for key, item in collection.items()]
        elif "matrix" in stage:
            ((axis, values),) = stage["matrix"].items()
            bindings = [(f"{name}@{value}", {"item": {axis: value}}) for value in expand_list(values, variables)]
        else:
            bindings = [(name, {})]
        instances += [(instance, body, {**variables, **binding}) for instance, binding in bindings]
    return instances


def declared_paths() -> set[str]:
    """Every out, metric and plot path of every stage of dvc.yaml, foreach and matrix expanded for params.yaml."""
    found: set[str] = set()
    for _, body, values in stage_instances():
        for section in ("outs", "metrics", "plots"):
            for entry in body.get(section, []):
                path = entry if isinstance(entry, str) else next(iter(entry))
                found.add(expand(path, values))
    return found


def stages_reading(key: str) -> set[str]:
    """The stages an edit of params.yaml's `key` re-runs by itself (DVC compares each stage's `params` entries: the
    key, a section above it or a key below it), the always-run check stage aside."""

    def related(entry: str) -> bool:
        return entry == key or key.startswith(entry + ".") or entry.startswith(key + ".")

    return {
        name
        for name, body, values in stage_instances()
        if not body.get("always_changed")
        and any(related(expand(entry, values)) for entry in body.get("params", []) if isinstance(entry, str))
    }


def test_an_edit_of_a_sweep_s_values_re_runs_that_sweep_and_the_report_alone():
    assert stages_reading("sweeps.split_size.values.quick") == {
        "sweep@split_size",
        "sweep_summary@split_size",
        "report",
    }


def test_an_edit_of_the_strategy_re_runs_training_alone_and_of_the_benchmark_its_timing_alone():
    workloads = load_params().inputs
    assert stages_reading("strategy") == {f"train@{workload}" for workload in workloads}
    assert stages_reading("benchmark.min_turns") == {f"benchmark@{workload}" for workload in workloads}
    timed_with_it = {f"{kind}@{workload}" for kind in ("train", "benchmark") for workload in workloads}
    assert stages_reading("accumulate") == timed_with_it | {f"sweep@{name}" for name in load_params().sweeps}, (
        "accumulate trains and times with the knob; the reference stays plain"
    )
    assert stages_reading("predict.network") == {f"predict@{workload}" for workload in workloads}, "never training"


def expand_list(values: Any, variables: dict[str, Any]) -> list[Any]:
    """A matrix axis: a literal list, or ${name} of a list in vars."""
    if isinstance(values, str):
        return variables[values.removeprefix("${").removesuffix("}")]
    return values


def written_paths() -> set[str]:
    """Every output path paths.py gives the stages for the shipped params.yaml."""
    params = load_params()
    found = {paths.ENVIRONMENT_FILE.as_posix(), "results/sources", paths.REPORT_FILE.as_posix()}
    found |= {paths.PROBE_FILE.as_posix(), paths.PROBE_NETWORK_FILE.as_posix()}
    for dataset in DATASET_NAMES:
        found |= {paths.raw_dir(dataset).as_posix(), paths.prepared_dir(dataset).as_posix()}
    for workload in params.inputs:
        for role in paths.ROLES:
            found |= {
                paths.model_file(role, workload),
                paths.checkpoint_file(role, workload),
                paths.results_file(role, workload),
                paths.train_curve_file(role, workload),
            }
        found |= {
            paths.results_file("eval", workload),
            paths.results_file("benchmark_cells", workload),
            paths.results_file("benchmark", workload),
            paths.benchmark_table_file(workload),
            paths.benchmark_figure_file(workload),
            paths.results_file("speedup", workload),
            paths.speedup_metrics_file(workload),
            paths.results_file("prediction", workload),
            paths.prediction_metrics_file(workload),
        }
    for sweep in params.sweeps:
        found |= {
            paths.results_file("sweep_cells", sweep),
            paths.results_file("sweep", sweep),
            paths.sweep_figure_file(sweep),
            paths.sweep_table_dir(sweep),
            paths.sweep_metrics_dir(sweep),
        }
    return {Path(path).as_posix() for path in found}


def test_every_path_the_code_writes_is_the_one_dvc_yaml_declares_and_back():
    assert written_paths() == declared_paths()


def test_the_source_records_folder_holds_what_paths_names():
    assert paths.source_record_file("hotdog").parent.as_posix() == "results/sources"


def test_dvc_yaml_lists_the_registry_datasets_and_params_yaml_every_workload():
    assert sorted(dvc_yaml_vars(dvc_yaml())["datasets"]) == sorted(DATASETS) == DATASET_NAMES
    assert set(load_params().inputs) == set(WORKLOADS)


def test_the_check_fails_when_dvc_yaml_and_the_code_drift(monkeypatch):
    """The comparison can fail: a path moved in the code no longer matches dvc.yaml."""
    monkeypatch.setattr(paths, "speedup_metrics_file", lambda workload: Path("metrics/moved") / f"{workload}.json")
    assert written_paths() != declared_paths()
