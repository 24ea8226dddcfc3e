"""The workload registry: one module per workload, one line here."""

from parabench.workloads import fashion_mnist
from parabench.workloads.base import LabelledImages, TrainSettings, Workload

WORKLOADS: dict[str, Workload] = {w.name: w for w in (fashion_mnist.WORKLOAD,)}

__all__ = ["WORKLOADS", "LabelledImages", "TrainSettings", "Workload"]
