"""The workload registry: one module per workload, one line here, its name in contract.WorkloadName."""

from typing import Any

from parabench.workloads.contract import TrainSettings, Workload, WorkloadData
from parabench.workloads.fashion_mnist import FashionMnist
from parabench.workloads.hotdog import Hotdog
from parabench.workloads.miniimagenet import MiniImagenet
from parabench.workloads.resnet50 import Resnet50

WORKLOADS: dict[str, Workload[Any]] = {w.name: w for w in (FashionMnist(), MiniImagenet(), Hotdog(), Resnet50())}

__all__ = ["WORKLOADS", "TrainSettings", "Workload", "WorkloadData"]
