"""Speedup, scaling efficiency and accuracy delta of a run against its reference run."""

from typing import Any


def compare(run: dict[str, Any], reference: dict[str, Any], evaluation: dict[str, Any]) -> dict[str, Any]:
    """speedup = reference train time / train time; efficiency = speedup / devices of the run."""
    speedup = reference["train_time_s"] / run["train_time_s"]
    return {
        "strategy": run["strategy"],
        "reference_strategy": reference["strategy"],
        "processes": run["processes"],
        "devices": run["devices"],
        "speedup": speedup,
        "scaling_efficiency": speedup / run["devices"],
        "train_time_s": run["train_time_s"],
        "reference_train_time_s": reference["train_time_s"],
        "samples_per_s": run["samples_per_s"],
        "reference_samples_per_s": reference["samples_per_s"],
        "test_acc": evaluation["train"]["test_acc"],
        "reference_test_acc": evaluation["reference"]["test_acc"],
        "accuracy_delta": evaluation["train"]["test_acc"] - evaluation["reference"]["test_acc"],
        "environment": {"run": run["environment"], "reference": reference["environment"]},
    }
