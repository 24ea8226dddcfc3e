"""compile: true: each block compiled in place gives the eager outputs and gradients (float32 within 1e-5: inductor
fuses and reorders the arithmetic), under the plain names; the first step holds the compilation; what cannot compile
here stops at the check, named.

One small model only: inductor compiles a block's forward and backward in C++ in about 10 s on 2 cores.
"""

import copy
import os
from pathlib import Path

import pytest
import torch
from torch import nn
from torch._inductor.runtime.cache_dir_utils import default_cache_dir

from parabench.config import load_params
from parabench.engine.plan import check_compile, make_plan
from parabench.engine.training import fit
from parabench.errors import ConfigError
from parabench.models.checkpointing import checkpoint_blocks
from parabench.models.compiled import compile_blocks
from parabench.runtime.process import Process
from parabench.strategies.registry import STRATEGIES
from tests.multiprocess import run_ranks
from tests.setups import cpu_setup, separable_data, tiny_plan


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
    with pytest.raises(ConfigError, match=r"compile: true does not compose with strategy dp.*strategy=ddp"):
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


def fit_rank(rank: int, world_size: int, strategy: str, knobs: dict[str, object], out: Path) -> None:
    """Two steps of `strategy` on the fashion_mnist ResNet (2 gloo ranks), with `knobs` (compile, checkpointing)."""
    plan = tiny_plan(strategy, setup=cpu_setup(devices=2, batch_shape=(32, 1, 28, 28)), epochs=1, batch_size=64)
    plan = plan.model_copy(update=knobs)
    torch.set_num_threads(plan.threads)
    result = fit(plan, Process(rank, rank, world_size, torch.device("cpu")), separable_data(), out / "ckpt.pt", "data")
    if rank == 0:
        torch.save(result.state_dict, out / "state.pt")


@pytest.mark.slow
def test_fsdp_trains_compiled_blocks_to_ddp_s_parameters(tmp_path):
    """FSDP2 runs each block on its weights gathered into views of one buffer. Compiled with dynamic shapes (dynamo's
    automatic dynamic, from a code object's second block shape on), inductor 2.14 failed on them ("Cannot convert
    expression to float"), with or without checkpointing; compiled static, fsdp's two steps end where ddp's with the
    same blocks do (float32, rtol 1e-5: the same kernels, only the gradients' reduction differs)."""
    for strategy in ("ddp", "fsdp"):
        (tmp_path / strategy).mkdir()
        run_ranks(2, fit_rank, strategy, {"compile": True}, tmp_path / strategy)
    ddp, fsdp = (torch.load(tmp_path / name / "state.pt", weights_only=True) for name in ("ddp", "fsdp"))
    assert ddp.keys() == fsdp.keys()
    for name, value in ddp.items():
        torch.testing.assert_close(fsdp[name], value, rtol=1e-5, atol=1e-6, msg=name)
