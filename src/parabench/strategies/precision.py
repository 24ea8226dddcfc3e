"""Mixed precision (params.yaml `precision`, Lightning's names): the forward and the loss under torch.autocast, the
backward outside it, as torch's AMP recipe asks; fp16's loss scaling is the training loop's (engine/training.py)."""

import statistics
import time
from contextlib import AbstractContextManager, nullcontext

import torch
from torch import Tensor, nn

from parabench.strategies.options import Precision

DTYPES: dict[Precision, torch.dtype] = {"32": torch.float32, "bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}


def autocast(precision: Precision, device: torch.device) -> AbstractContextManager[object]:
    """torch.autocast to the precision's dtype on the device's type; nothing for "32"."""
    if precision == "32":
        return nullcontext()
    return torch.autocast(device.type, dtype=DTYPES[precision])


class AutocastForward(nn.Module):
    """`module`'s forward under autocast, for a forward that a library runs (a pipeline stage's schedule). It holds
    `module` as a child: optimise and save `module` itself, whose parameter names stay the plain model's."""

    def __init__(self, module: nn.Module, precision: Precision, device: torch.device):
        super().__init__()
        self.module, self.precision, self.device = module, precision, device

    def forward(self, *inputs: Tensor) -> Tensor:
        """The wrapped forward, autocast."""
        with autocast(self.precision, self.device):
            outputs: Tensor = self.module(*inputs)
        return outputs


def probe_step_seconds(precision: Precision, repeats: int = 3) -> float:
    """Median seconds of a small training step on the CPU under the precision's autocast: a convolution, BatchNorm,
    ReLU and a linear layer on 16 images of 16 x 28 x 28, forward and backward, after one untimed. What torch's
    kernels for the dtype cost on this CPU (an instruction set flag does not say: torch has no fast float16
    convolution backward on Sapphire Rapids, which has AVX512-FP16)."""
    layers = nn.Sequential(
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.Flatten(), nn.Linear(32 * 28 * 28, 10)
    )
    inputs = torch.randn(16, 16, 28, 28)

    def step() -> float:
        start = time.perf_counter()
        with autocast(precision, torch.device("cpu")):
            loss = layers(inputs).float().sum()
        loss.backward()
        return time.perf_counter() - start

    step()
    return statistics.median(step() for _ in range(repeats))
