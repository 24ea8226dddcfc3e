"""The workload registry: one module per workload, one line here."""

from parabench.workloads.contract import TrainSettings, Workload, WorkloadData
from parabench.workloads.fashion_mnist import FashionMnist
from parabench.workloads.hotdog import Hotdog
from parabench.workloads.miniimagenet import MiniImagenet

WORKLOADS: dict[str, Workload] = {w.name: w for w in (FashionMnist(), MiniImagenet(), Hotdog())}

__all__ = ["WORKLOADS", "TrainSettings", "Workload", "WorkloadData"]
