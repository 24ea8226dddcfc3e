"""Mixed precision (params.yaml `precision`, Lightning's names): the forward and the loss under torch.autocast, the
backward outside it, as torch's AMP recipe asks; fp16's loss scaling is the training loop's (engine/training.py)."""

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
