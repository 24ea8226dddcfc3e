"""The evaluate stage: test scores of the trained and the reference model, and their difference item by item."""

import torch

from parabench.config import Params
from parabench.engine import checkpoint
from parabench.engine.plan import make_plan
from parabench.errors import DataError
from parabench.paths import ROLES, model_file
from parabench.records import Evaluation, PairedDifference
from parabench.stats import paired_difference


def evaluate_models(params: Params, workload_name: str) -> Evaluation:
    """Each role's saved model scored on the test split, on one device of this machine; and, where the workload
    scores items, the run's score minus the reference's on the very same test items (`paired`)."""
    plan = make_plan(params, workload_name, "reference")
    device = torch.device("cuda", 0) if plan.machine.accelerator == "cuda" else torch.device("cpu")
    torch.set_num_threads(plan.machine.threads_per_process(1))
    data = plan.open_data()
    items = {}
    for role in ROLES:
        path = model_file(role, workload_name)
        if not path.exists():
            raise DataError(f"{path}: no trained model; run `dvc repro {role}@{workload_name}` first.")
        model = plan.workload.model_holding(plan.settings, checkpoint.read_tensors(path))
        items[role] = data.item_scores(model.to(device), "test", device)
    train, reference = items["train"], items["reference"]
    return Evaluation(
        train=data.summarize("test", train),
        reference=data.summarize("test", reference),
        paired=PairedDifference(**paired_difference(train, reference))
        if train is not None and reference is not None
        else None,
    )
