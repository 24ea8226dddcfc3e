"""The dataset registry: each dataset module downloads and prepares itself."""

from types import ModuleType

from parabench.data import fashion_mnist

DATASETS: dict[str, ModuleType] = {"fashion_mnist": fashion_mnist}
