"""torch.compile of a model's ordered blocks (params.yaml `compile: true`): each block's forward compiled whole
(fullgraph: a graph break is an error, never a silent fall back to eager), before any strategy, so replicas, shards and
pipeline stages all run compiled blocks under the plain model's parameter names. The forward, not the module's call:
the hooks a strategy adds to a block (FSDP2 gathers its weights in one) stay outside the compiled graph. Compilation
happens in the first steps, which the timing leaves out as warm-up."""

import torch
from torch import nn


def compile_blocks(model: nn.Sequential) -> None:
    """Compile each block's forward of `model` in place, whole."""
    for block in model:
        block.forward = torch.compile(block.forward, fullgraph=True)
