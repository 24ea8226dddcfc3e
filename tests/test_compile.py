"""compile: true: each block compiled in place gives the eager outputs and gradients (float32 within 1e-5: inductor
fuses and reorders the arithmetic), under the plain names; the first step holds the compilation; what cannot compile
here stops at the check, named.

One small model only: inductor compiles a block's forward and backward in C++ in about 10 s on 2 cores.
"""

import copy
import os

import pytest
import torch
from torch import nn
from torch._inductor.runtime.cache_dir_utils import default_cache_dir

from parabench.config import load_params
from parabench.engine.plan import check_compile, make_plan
from parabench.errors import ConfigError
from parabench.models.checkpointing import checkpoint_blocks
from parabench.models.compiled import compile_blocks
from parabench.strategies import STRATEGIES


def tiny() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Sequential(nn.Linear(6, 8), nn.ReLU()), nn.Linear(8, 3))


def outputs_and_gradients(model: nn.Sequential, inputs: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    outputs = model(inputs)
    outputs.square().sum().backward()
    return outputs.detach(), [parameter.grad.clone() for parameter in model.parameters() if parameter.grad is not None]


@pytest.mark.slow
def test_compiled_blocks_give_the_eager_outputs_and_gradients():
    inputs = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    eager, compiled = tiny(), tiny()
    compile_blocks(compiled)
    assert [name for name, _ in compiled.named_parameters()] == [name for name, _ in eager.named_parameters()]
    expected, expected_grads = outputs_and_gradients(eager, inputs)
    got, grads = outputs_and_gradients(compiled, inputs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, rtol=1e-5, atol=1e-5)
    assert all(hasattr(block.forward, "_torchdynamo_orig_callable") for block in compiled), "compiled, not eager"
    compiled.zero_grad(set_to_none=True)
    sandbox = copy.deepcopy(compiled[0])  # as the cut times a block (strategies/partition.py)
    sandbox(inputs).sum().backward()
    assert all(parameter.grad is None for parameter in compiled.parameters()), "the copy ran the original's weights"


@pytest.mark.slow
def test_compiled_checkpointed_blocks_give_the_eager_outputs_and_gradients():
    """Both knobs at once: each block compiled, then checkpointed around its compiled forward (the order training.py
    applies them in: dynamo cannot trace the checkpoint's BatchNorm context inside a compiled graph)."""
    inputs = torch.randn(4, 6, generator=torch.Generator().manual_seed(1))
    eager, both = tiny(), tiny()
    compile_blocks(both)
    checkpoint_blocks(both)
    expected, expected_grads = outputs_and_gradients(eager, inputs)
    got, grads = outputs_and_gradients(both, inputs)
    assert all(hasattr(block.forward.__func__.args[0], "_torchdynamo_orig_callable") for block in both), "compiled"
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, rtol=1e-5, atol=1e-5)


def test_dp_and_a_missing_compiler_stop_at_the_check(base_params, write_params, monkeypatch):
    base_params["compile"] = True
    params = load_params(write_params(base_params))
    plan = make_plan(params, "fashion_mnist", "train")
    assert plan.describe().compile and not make_plan(params, "fashion_mnist", "reference").describe().compile
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(ConfigError, match=r"compile: true needs a C\+\+ compiler.*set compile: false"):
        make_plan(params, "fashion_mnist", "train")
    with pytest.raises(ConfigError, match=r"compile: true does not compose with strategy dp.*use ddp"):
        check_compile(STRATEGIES["dp"], plan.machine)


def test_a_forced_cpu_capability_compiles_into_a_cache_of_its_own(monkeypatch):
    """torch 2.14 reuses a kernel cached under the machine's ISA when ATEN_CPU_CAPABILITY forces another, and the
    kernel fails: found when the suite ran with avx2 forced after a run without."""
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", default_cache_dir())  # as importing torch's compiler leaves it
    compile_blocks(tiny())
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == default_cache_dir() + "-avx2"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/chosen/by/the/user")
    compile_blocks(tiny())
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/chosen/by/the/user"
