"""parabench: a reproducible benchmark of PyTorch parallel-training strategies."""

__version__ = "0.1.0"
