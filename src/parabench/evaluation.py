"""Test accuracy of the trained and the reference model of a workload, on its whole test set."""

from typing import Any

import torch

from parabench.config import Params
from parabench.engine.evaluate import accuracy
from parabench.engine.hardware import resolve
from parabench.errors import DataError
from parabench.paths import ROLES, model_file, prepared_dir
from parabench.workloads import WORKLOADS


def evaluate_models(params: Params, workload_name: str) -> dict[str, Any]:
    """Accuracy of each role's saved model, on one device of this machine."""
    workload, settings = WORKLOADS[workload_name], params.settings(workload_name)
    machine = resolve(params.hardware)
    device = torch.device("cuda", 0) if machine.accelerator == "cuda" else torch.device("cpu")
    torch.set_num_threads(machine.threads_per_process(1))
    _, test = workload.load_data(prepared_dir(workload.dataset))
    results: dict[str, Any] = {}
    for role in ROLES:
        path = model_file(role, workload_name)
        if not path.exists():
            raise DataError(f"{path}: no trained model; run `dvc repro {role}@{workload_name}` first.")
        model = workload.build_model(settings)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        model.to(device)
        results[role] = {
            "test_acc": accuracy(model, test, workload.to_inputs, settings.eval_batch_size, device),
            "test_samples": len(test),
        }
    return results
