"""torch.compile of a model's ordered blocks (params.yaml `compile: true`), each in place and whole (fullgraph: a
graph break is an error, never a silent fall back to eager), before any strategy: replicas, shards and pipeline
stages all run compiled blocks, under the plain model's parameter names. Compilation happens in the first steps,
which the timing leaves out as warm-up."""

from torch import nn


def compile_blocks(model: nn.Sequential) -> None:
    """Compile each block of `model` in place (nn.Module.compile), whole."""
    for block in model:
        block.compile(fullgraph=True)
