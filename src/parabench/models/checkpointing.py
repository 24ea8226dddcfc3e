"""Activation checkpointing of a model's ordered blocks (params.yaml `activation_checkpointing: blocks`): each block
keeps only its input for backward and runs its forward again there (torch.utils.checkpoint, non-reentrant), trading
compute for peak memory. Applied to the plain model before any strategy, so that every strategy's cut, wrapper or
shard runs the checkpointed blocks; parameter names do not change."""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, Literal

from torch import nn
from torch.utils.checkpoint import checkpoint

from parabench.models.block_forward import forward_function, replace_forward

Checkpointing = Literal["none", "blocks"]  # params.yaml `activation_checkpointing`


@contextmanager
def batchnorm_statistics_kept(block: nn.Module) -> Iterator[None]:
    """Within it, the block's BatchNorm layers leave their running statistics and batch count as they are (momentum
    0): the forward run again in backward must not count its batch twice."""
    norms = [module for module in block.modules() if isinstance(module, nn.modules.batchnorm._BatchNorm)]
    saved = [
        (norm.momentum, None if norm.num_batches_tracked is None else norm.num_batches_tracked.clone())
        for norm in norms
    ]
    for norm in norms:
        norm.momentum = 0.0
    try:
        yield
    finally:
        for norm, (momentum, count) in zip(norms, saved):
            norm.momentum = momentum
            if count is not None and norm.num_batches_tracked is not None:
                norm.num_batches_tracked.copy_(count)


def checkpointed_forward(forward: Callable[..., Any], block: nn.Module, *inputs: Any) -> Any:
    """`forward` of `block` under torch.utils.checkpoint, the block's BatchNorm statistics counted once."""
    return checkpoint(
        forward,
        block,
        *inputs,
        use_reentrant=False,
        context_fn=lambda: (nullcontext(), batchnorm_statistics_kept(block)),
    )


def checkpoint_blocks(model: nn.Sequential) -> None:
    """Make each block of `model` checkpointed: its forward as it is (its class's, or compiled: compiled.py), called as
    usual, saves only its inputs for backward."""
    for block in model:
        replace_forward(block, functools.partial(checkpointed_forward, forward_function(block)))
