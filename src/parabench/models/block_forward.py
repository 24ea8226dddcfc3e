"""A block's forward replaced in place, as the knobs do to each of a model's blocks (checkpointing.py, compiled.py): by
a method bound to the block, not a closure over it, so that a deep copy of the block (the cut times copies:
strategies/partition.py) runs on the copy's own parameters and statistics."""

import types
from collections.abc import Callable
from typing import Any

from torch import nn


def forward_function(block: nn.Module) -> Callable[..., Any]:
    """The function behind the block's forward as it is now (its class's, or one bound here), taking the block first."""
    forward: Any = block.forward
    function: Callable[..., Any] = forward.__func__
    return function


def replace_forward(block: nn.Module, function: Callable[..., Any]) -> None:
    """From now on the block's forward is `function`, called with the block first."""
    block.forward = types.MethodType(function, block)
