"""The evaluate stage: the workload's test scores of the trained and the reference model."""

import torch

from parabench.config import Params
from parabench.engine.plan import make_plan
from parabench.engine.worker import open_data
from parabench.errors import DataError
from parabench.paths import ROLES, model_file


def evaluate_models(params: Params, workload_name: str) -> dict[str, dict[str, float]]:
    """Each role's saved model scored on the test split, on one device of this machine."""
    plan = make_plan(params, workload_name, "reference")
    device = torch.device("cuda", 0) if plan.machine.accelerator == "cuda" else torch.device("cpu")
    torch.set_num_threads(plan.machine.threads_per_process(1))
    data = open_data(plan)
    scores = {}
    for role in ROLES:
        path = model_file(role, workload_name)
        if not path.exists():
            raise DataError(f"{path}: no trained model; run `dvc repro {role}@{workload_name}` first.")
        model = plan.workload.build_model(plan.settings)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        scores[role] = data.evaluate(model.to(device), "test", device)
    return scores
