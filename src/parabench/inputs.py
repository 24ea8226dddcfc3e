"""What each workload's stages read besides the code (params.yaml `inputs`): its prepared dataset, or for a
synthetic workload the file that draws its data or another dataset's prepared images (real pixels)."""

from parabench.data.registry import DATASETS
from parabench.errors import ConfigError
from parabench.paths import prepared_dir
from parabench.workloads import WORKLOADS


def input_choices(workload: str) -> dict[str, str | None]:
    """What a workload's stages may read (params.yaml `inputs`): path -> the prepared dataset, or None for the file
    that draws a synthetic workload's data. A dataset's workload reads its own; a synthetic one reads its random
    data, or any prepared dataset's training images (real pixels)."""
    own = WORKLOADS[workload].dataset
    datasets = [own] if own is not None else sorted(DATASETS)
    choices: dict[str, str | None] = {}
    if own is None and WORKLOADS[workload].generator_file is not None:
        choices[WORKLOADS[workload].generator_file] = None
    choices.update({prepared_dir(dataset).as_posix(): dataset for dataset in datasets})
    return choices


def check_inputs(path: str, inputs: dict[str, str]) -> None:
    """Every workload has an entry in `inputs`, and only workloads do; each names what its workload can read."""
    unknown, missing = sorted(set(inputs) - set(WORKLOADS)), [name for name in WORKLOADS if name not in inputs]
    if unknown:
        raise ConfigError(f"{path}: inputs: {', '.join(unknown)} names no workload; the workloads are "
                          f"{', '.join(WORKLOADS)}.")
    if missing:
        raise ConfigError(f"{path}: inputs has no entry for {', '.join(missing)}: every workload needs one (dvc.yaml "
                          f"runs the workloads listed there); add e.g. `{missing[0]}: "
                          f"{next(iter(input_choices(missing[0])))}`.")
    for workload, value in inputs.items():
        check_input_choice(path, f"inputs.{workload}", workload, value)


def check_input_choice(path: str, key: str, workload: str, value: str) -> None:
    """`value` is one of the inputs `workload` can read."""
    choices = input_choices(workload)
    if value not in choices:
        described = [f"{choice} ({'that dataset' if dataset else 'random data drawn from the seed'})"
                     for choice, dataset in choices.items()]
        raise ConfigError(f"{path}: {key}: {value!r} is not what {workload} can read; choose one of: "
                          f"{', '.join(described)}.")
