"""Where every pipeline file lives; dvc.yaml spells the same paths."""

from pathlib import Path

ROLES = ("train", "reference")


def raw_dir(dataset: str) -> Path:
    """Downloaded, verified files of a dataset."""
    return Path("data/raw") / dataset


def prepared_dir(dataset: str) -> Path:
    """Decoded arrays of a dataset."""
    return Path("data/prepared") / dataset


def model_file(role: str, workload: str) -> Path:
    """Trained weights of a role (train or reference)."""
    return Path("models") / role / f"{workload}.pt"


def checkpoint_file(role: str, workload: str) -> Path:
    """The last epoch's checkpoint, kept between runs so a crashed run resumes."""
    return Path("checkpoints") / role / f"{workload}.pt"


def train_metrics_file(role: str, workload: str) -> Path:
    """Summary of one training run."""
    return Path("metrics") / role / f"{workload}.json"


def train_curve_file(role: str, workload: str) -> Path:
    """Per-epoch curves of one training run."""
    return Path("plots") / role / f"{workload}.csv"


def eval_metrics_file(workload: str) -> Path:
    """Test accuracy of the trained and the reference model."""
    return Path("metrics/eval") / f"{workload}.json"


def speedup_metrics_file(workload: str) -> Path:
    """Speedup, scaling efficiency and accuracy delta against the reference."""
    return Path("metrics/speedup") / f"{workload}.json"
