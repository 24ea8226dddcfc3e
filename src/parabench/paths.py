"""Where every pipeline file lives; dvc.yaml declares the same paths (tests/test_dvc_yaml_paths.py keeps them equal)."""

from pathlib import Path
from typing import Literal

ROLES: tuple[Literal["train"], Literal["reference"]] = ("train", "reference")
ENVIRONMENT_FILE = Path("results/environment.json")
PROBE_FILE = Path("results/probe.json")  # the collectives timed over this node's devices (stage probe)
PROBE_NETWORK_FILE = Path("results/probe_network.json")  # and between the nodes, one rank on each (stage probe)
REPORT_FILE = Path("report/index.html")  # the answer on one page, every figure embedded


def raw_dir(dataset: str) -> Path:
    """Downloaded, verified files of a dataset."""
    return Path("data/raw") / dataset


def source_record_file(dataset: str) -> Path:
    """What the download stage of a dataset reads (its params section and any local folder's fingerprint)."""
    return Path("results/sources") / f"{dataset}.json"


def prepared_dir(dataset: str) -> Path:
    """Decoded arrays of a dataset."""
    return Path("data/prepared") / dataset


def model_file(role: str, workload: str) -> Path:
    """Trained weights of a role (train or reference)."""
    return Path("models") / role / f"{workload}.pt"


def checkpoint_file(role: str, workload: str) -> Path:
    """The last epoch's checkpoint, kept between runs so a crashed run resumes."""
    return Path("checkpoints") / role / f"{workload}.pt"


def results_file(kind: str, workload: str) -> Path:
    """Everything one stage measured or summarised (train, reference, eval, benchmark_cells and sweep_cells as timed,
    benchmark and sweep as summarised, speedup), environment included: not a metric."""
    return Path("results") / kind / f"{workload}.json"


def train_curve_file(role: str, workload: str) -> Path:
    """Per-epoch curves of one training run."""
    return Path("plots") / role / f"{workload}.csv"


def speedup_metrics_file(workload: str) -> Path:
    """The few numbers that compare the run with its reference: a row of `dvc metrics show`."""
    return Path("metrics/speedup") / f"{workload}.json"


def benchmark_table_file(workload: str) -> Path:
    """One row per benchmark cell, for `dvc plots`."""
    return Path("plots/benchmark") / f"{workload}.csv"


def benchmark_figure_file(workload: str) -> Path:
    """The benchmark's bar chart with its spread."""
    return Path("plots/figures") / f"benchmark-{workload}.png"


def sweep_table_dir(sweep: str) -> Path:
    """One CSV per curve of a sweep (value, median step time, quartiles, rate), for `dvc plots`."""
    return Path("plots/sweep") / sweep


def sweep_figure_file(sweep: str) -> Path:
    """The sweep's curves with their spread and the reference lines."""
    return Path("plots/figures") / f"sweep-{sweep}.png"


def sweep_metrics_dir(sweep: str) -> Path:
    """One small JSON per curve of a sweep (best value, speedups): a row each in `dvc metrics show`."""
    return Path("metrics/sweep") / sweep


def prediction_metrics_file(workload: str) -> Path:
    """What more devices would buy, in a few numbers: the prediction's errors where it was checked, and an answer."""
    return Path("metrics/prediction") / f"{workload}.json"
