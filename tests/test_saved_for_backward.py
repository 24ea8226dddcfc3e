"""What a benchmark cell reports as kept for backward (runtime.memory.SavedForBackward): the memory autograd holds,
each storage once, the parameters left out; on an H200 the old count (every saved tensor's bytes) read 4,971 MiB for
ResNet-50 at batch 120, above the 3,427 MiB CUDA allocated at its peak."""

import torch
from torch import nn

from parabench.runtime.memory import SavedForBackward


def nbytes(tensor: torch.Tensor) -> int:
    """The bytes of a tensor's whole storage."""
    return tensor.untyped_storage().nbytes()


def two_layers() -> nn.Sequential:
    """Two linear layers: the second keeps its weight for the first's gradient."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 8))


def test_a_tensor_saved_by_several_operations_counts_once_and_parameters_not_at_all():
    """Each layer keeps its input, the second its weight too; y * y keeps y twice, y.sin() once more: the inputs, the
    hidden layer and y, once each."""
    model, inputs = two_layers(), torch.randn(16, 64)
    with SavedForBackward() as saved:
        hidden = model[0](inputs)
        outputs = model[1](hidden)
        (outputs * outputs + outputs.sin()).sum().backward()
    assert saved.bytes == nbytes(inputs) + nbytes(hidden) + nbytes(outputs) == (16 * 64 + 16 * 32 + 16 * 8) * 4


def test_a_saved_view_keeps_its_whole_storage():
    """A slice saved for backward holds the tensor it is cut from."""
    weight = nn.Parameter(torch.randn(100, 10))
    with SavedForBackward() as saved:
        whole = weight * 2
        whole[:1].sin().sum().backward()
    assert saved.bytes == nbytes(whole) == 100 * 10 * 4


def test_under_bfloat16_autocast_the_half_width_copies_are_what_is_kept():
    """The inputs' and the hidden layer's bf16, and the second weight's bf16 copy: memory of its own (autocast made it),
    unlike the fp32 weight."""
    model, inputs = two_layers(), torch.randn(16, 64)
    with SavedForBackward() as saved, torch.autocast("cpu", dtype=torch.bfloat16):
        model(inputs).float().sum().backward()
    assert saved.bytes == (16 * 64 + 16 * 32 + 8 * 32) * 2, saved.bytes
