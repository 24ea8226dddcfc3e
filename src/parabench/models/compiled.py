"""torch.compile of a model's ordered blocks (params.yaml `compile: true`): each block's forward compiled whole
(fullgraph: a graph break is an error, never a silent fall back to eager), before any strategy, so replicas, shards and
pipeline stages all run compiled blocks under the plain model's parameter names. The forward, not the module's call:
the hooks a strategy adds to a block (FSDP2 gathers its weights in one) stay outside the compiled graph. Blocks of one
class share one code object, which dynamo compiles once per block shape: its limit of 8 per code object is raised to
RECOMPILE_LIMIT, so that a ResNet's blocks (and a warm worker's next cells) are not refused. Each graph is static
(`dynamic=False`): from a code object's second shape on, dynamo would otherwise compile one with symbolic shapes, and
inductor 2.14 fails to build that one over FSDP2's gathered weights ("Cannot convert expression to float").
Compilation happens in the first steps, which the timing leaves out as warm-up.

Inductor's on-disk cache keys a CPU kernel by its source, not by the vector ISA it was built for, which
ATEN_CPU_CAPABILITY changes: in torch 2.14 a kernel cached under the machine's own ISA and loaded under a forced
`avx2` fails in its backward ("SystemError: ... returned a result with an exception set"). A forced capability
therefore compiles into a cache of its own, unless the user named one (TORCHINDUCTOR_CACHE_DIR; importing torch's
compiler sets that variable to the default, which counts as unnamed)."""

import os

from torch import nn

from parabench.models.block_forward import forward_function, replace_forward

RECOMPILE_LIMIT = 64


def compile_blocks(model: nn.Sequential) -> None:
    """Compile each block's forward of `model` in place, whole."""
    # on use: importing torch's compiler costs a process 1 to 3 s, which a run without compile must not pay
    import torch._dynamo.config
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    capability, default = os.environ.get("ATEN_CPU_CAPABILITY"), default_cache_dir()
    if capability and os.environ.get("TORCHINDUCTOR_CACHE_DIR", default) == default:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = f"{default}-{capability}"
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
    for block in model:
        replace_forward(block, torch.compile(forward_function(block), fullgraph=True, dynamic=False))
