"""The Relation Network (seed 000) as ordered blocks: shapes, episode-wise blocks, pairing, counts, init.

Every block must keep dim 0 = the episode, so that pipeline strategies can split any block boundary into
micro-batches of episodes; with BatchNorm frozen (eval mode) splitting the episodes must not change a number.
Tolerances: rtol 1e-5, atol 1e-6 on outputs (the same float operations, regrouped by batch size).
Images are 84x84 (miniImageNet); episodes are kept small so that the file runs in seconds on 2 CPU cores.
"""

import math
import random

import numpy as np
import pytest
import torch
from torch import nn

from parabench.models.relation import (
    SEED_PARAMETER_COUNT,
    PairWithWays,
    PerImage,
    conv4_parameter_count,
    parameter_count,
    relation_network,
)

RTOL, ATOL = 1e-5, 1e-6
SIZE = 84


def _model(encoder: str, n_way: int, n_shot: int, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return relation_network(n_way, n_shot, encoder)


def _episodes(episodes: int, n_way: int, n_shot: int, n_query: int, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    images = n_way * (n_shot + n_query)
    return torch.randn(episodes, images, 3, SIZE, SIZE, generator=generator)


def _run_blocks(model: nn.Sequential, x: torch.Tensor) -> list[torch.Tensor]:
    outputs = []
    for block in model:
        x = block(x)
        outputs.append(x)
    return outputs


@pytest.mark.parametrize(
    ("encoder", "episodes", "n_way", "n_shot", "n_query"),
    [("conv4", 2, 5, 1, 15), ("conv4", 1, 5, 5, 3), ("bottleneck", 1, 5, 1, 3)],
)
@torch.no_grad()
def test_scores_shape_and_range(encoder: str, episodes: int, n_way: int, n_shot: int, n_query: int) -> None:
    model = _model(encoder, n_way, n_shot).eval()
    scores = model(_episodes(episodes, n_way, n_shot, n_query))
    assert scores.shape == (episodes, n_way * n_query, n_way)
    assert scores.dtype == torch.float32
    assert torch.isfinite(scores).all()
    assert scores.min() >= 0.0 and scores.max() <= 1.0


def test_block_lists() -> None:
    """The documented 8 blocks: 4 encoder blocks, pairing, 2 relation blocks, head (conv4); bottleneck alike."""
    for encoder in ("conv4", "bottleneck"):
        model = _model(encoder, 5, 1)
        assert len(model) == 8
        assert [type(block) for block in model][:4] == [PerImage] * 4
        assert isinstance(model[4], PairWithWays)
        assert [type(block) for block in model][5:7] == [PerImage] * 2


@pytest.mark.parametrize("encoder", ["conv4", "bottleneck"])
@torch.no_grad()
def test_every_block_keeps_episodes_on_dim_0(encoder: str) -> None:
    n_way, n_shot, n_query, episodes = 3, 1, 1, 3
    model = _model(encoder, n_way, n_shot).eval()
    outputs = _run_blocks(model, _episodes(episodes, n_way, n_shot, n_query))
    shapes = [tuple(out.shape) for out in outputs]
    assert all(shape[0] == episodes for shape in shapes), shapes
    pairs = n_way * n_query * n_way
    assert shapes[4][1] == pairs  # the pairing block: one row per (query, way)
    assert shapes[-1] == (episodes, n_way * n_query, n_way)
    if encoder == "conv4":  # the paper's feature map sizes on 84x84
        assert shapes[3] == (episodes, n_way * (n_shot + n_query), 64, 19, 19)
        assert shapes[4] == (episodes, pairs, 128, 19, 19)
        assert shapes[6] == (episodes, pairs, 64, 3, 3)
    else:
        assert shapes[3][2] == 1024 and shapes[4][2] == 2048 and shapes[6][2] == 256


@pytest.mark.parametrize(("encoder", "episodes", "cut"), [("conv4", 4, 1), ("conv4", 4, 2), ("bottleneck", 2, 1)])
@torch.no_grad()
def test_splitting_episodes_changes_nothing_in_eval_mode(encoder: str, episodes: int, cut: int) -> None:
    """Pipelining by episodes is valid: blocks on two micro-batches of episodes, concatenated, = whole batch."""
    n_way, n_shot, n_query = 3, 2, 1
    model = _model(encoder, n_way, n_shot).eval()
    x = _episodes(episodes, n_way, n_shot, n_query)
    whole = _run_blocks(model, x)
    first, second = _run_blocks(model, x[:cut]), _run_blocks(model, x[cut:])
    for block, (w, a, b) in enumerate(zip(whole, first, second)):
        # Another batch size may pick another kernel (1 thread: differences up to 7e-7 of the block's largest value
        # in the bottleneck encoder's deep stack), so the absolute tolerance scales with the block's magnitude.
        atol = max(ATOL, 1e-5 * w.abs().max().item())
        torch.testing.assert_close(
            torch.cat([a, b]), w, rtol=RTOL, atol=atol, msg=lambda m, block=block: f"block {block}: {m}"
        )
    # the scores do tell episodes and queries apart (the comparison above is not between constants)
    assert (whole[-1] - whole[-1][:1]).abs().max() > 100 * ATOL


@torch.no_grad()
def test_conv4_sums_the_shots_of_each_way() -> None:
    """5-way 5-shot: permuting the shots within each way leaves the scores unchanged; swapping ways does not."""
    n_way, n_shot, n_query = 5, 5, 2
    model = _model("conv4", n_way, n_shot).eval()
    x = _episodes(1, n_way, n_shot, n_query)
    support = n_way * n_shot
    generator = torch.Generator().manual_seed(2)
    within_ways = torch.cat(
        [w * n_shot + torch.randperm(n_shot, generator=generator) for w in range(n_way)]
        + [torch.arange(support, x.shape[1])]
    )
    assert not torch.equal(within_ways[:support], torch.arange(support))
    scores = model(x)
    torch.testing.assert_close(model(x[:, within_ways]), scores, rtol=RTOL, atol=ATOL)

    # the way features are the sums of the shots' features (the pairing block on its own)
    features = torch.randn(2, support + 3, 4, 2, 2, generator=generator)
    pairs = PairWithWays(n_way, n_shot)(features)  # (E, Q*W, 2C, H, W), [way, query] on channels
    way_features = features[:, :support].reshape(2, n_way, n_shot, 4, 2, 2).sum(2)
    for q in range(3):
        for w in range(n_way):
            torch.testing.assert_close(pairs[:, q * n_way + w, :4], way_features[:, w])
            torch.testing.assert_close(pairs[:, q * n_way + w, 4:], features[:, support + q])

    # control: moving one shot to another way changes the scores
    swapped = torch.arange(x.shape[1])
    swapped[[0, n_shot]] = swapped[[n_shot, 0]]
    assert (model(x[:, swapped]) - scores).abs().max() > 100 * ATOL


@pytest.mark.parametrize("encoder", ["conv4", "bottleneck"])
def test_training_mode_backward_reaches_every_parameter(encoder: str) -> None:
    n_way, n_shot, n_query = 3, 2, 1
    model = _model(encoder, n_way, n_shot).train()
    scores = model(_episodes(2, n_way, n_shot, n_query))
    targets = torch.eye(n_way).repeat_interleave(n_query, dim=0).expand_as(scores)
    nn.functional.mse_loss(scores, targets).backward()
    missing = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert not missing


def test_parameter_counts() -> None:
    seed_count = parameter_count(_model("bottleneck", 5, 1))
    conv4_count = parameter_count(_model("conv4", 5, 1))
    print(f"\nseed  Relation Network: {seed_count:,} parameters (seed 000 prints {SEED_PARAMETER_COUNT:,})")
    print(f"conv4 Relation Network: {conv4_count:,} parameters (conv4_parameter_count(): {conv4_parameter_count():,})")
    assert seed_count == SEED_PARAMETER_COUNT == 11_285_569
    assert conv4_count == conv4_parameter_count() == 228_689
    # the counts do not depend on the episode shape
    assert parameter_count(_model("bottleneck", 20, 5)) == seed_count
    assert parameter_count(_model("conv4", 20, 5)) == conv4_count


@pytest.mark.parametrize("encoder", ["conv4", "bottleneck"])
def test_init_uses_the_global_torch_rng(encoder: str) -> None:
    """Same torch seed -> same weights, whatever Python's and NumPy's RNGs hold; another seed -> others."""
    random.seed(1)
    np.random.seed(1)
    first = _model(encoder, 5, 1, seed=7).state_dict()
    after_first = torch.rand(1)
    random.seed(2)
    np.random.seed(2)
    second = _model(encoder, 5, 1, seed=7).state_dict()
    assert torch.equal(torch.rand(1), after_first)  # same number of global draws, too
    other = _model(encoder, 5, 1, seed=8).state_dict()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert any(not torch.equal(first[k], other[k]) for k in first if first[k].is_floating_point())


def test_conv4_initialisation_is_sungs() -> None:
    """weights_init: conv normal(0, sqrt(2/n)), n = k*k*out, zero bias; BN 1/0; Linear normal(0, 0.01), bias 1."""
    model = _model("conv4", 5, 1)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert len(convs) == 6 and len(linears) == 2 and len(norms) == 6
    for conv in convs:
        std = math.sqrt(2.0 / (9 * conv.out_channels))
        assert abs(conv.weight.std().item() - std) < 0.1 * std
        assert abs(conv.weight.mean().item()) < 0.1 * std
        assert torch.equal(conv.bias, torch.zeros_like(conv.bias))
    for norm in norms:
        assert torch.equal(norm.weight, torch.ones_like(norm.weight))
        assert torch.equal(norm.bias, torch.zeros_like(norm.bias))
    big = linears[0]  # Linear(576, 8): enough weights for a std estimate
    assert abs(big.weight.std().item() - 0.01) < 0.001
    for linear in linears:
        assert torch.equal(linear.bias, torch.ones_like(linear.bias))


def test_an_episode_without_queries_is_an_internal_error() -> None:
    """The settings' n_way, n_shot and encoder are checked by params.yaml's schema (tests/test_config.py); an
    episode with no image after its support set can only come from a bug."""
    with pytest.raises(AssertionError, match="no queries"):
        relation_network(2, 1, "conv4").eval()(torch.randn(1, 2, 3, SIZE, SIZE))
