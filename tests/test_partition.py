"""Cutting the ordered blocks into stages: the exact cost split, the balances, and a cut that keeps the keys."""

import itertools

import pytest
import torch
from torch import nn

from parabench.models.d2l_resnet18 import d2l_resnet18
from parabench.strategies import partition
from parabench.strategies.partition import balance_by_parameters, choose_cut, cut, split_costs


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return d2l_resnet18(10, in_channels=1, width=4)


def largest_group(costs: list[float], sizes: list[int]) -> float:
    starts = list(itertools.accumulate(sizes, initial=0))
    return max(sum(costs[start : start + size]) for start, size in zip(starts, sizes))


def brute_force_best(costs: list[float], n: int) -> float:
    """The smallest largest group over every way of cutting `costs` into n contiguous non-empty groups."""
    best = float("inf")
    for cuts in itertools.combinations(range(1, len(costs)), n - 1):
        bounds = (0, *cuts, len(costs))
        sizes = [end - start for start, end in itertools.pairwise(bounds)]
        best = min(best, largest_group(costs, sizes))
    return best


@pytest.mark.parametrize(
    ("costs", "n", "expected"),
    [
        ([1, 1, 1, 1], 2, [2, 2]),
        ([5, 1, 1, 1, 1, 1], 2, [1, 5]),
        ([1, 2, 3, 4, 5], 3, [3, 1, 1]),
        ([7, 2, 5, 10, 8], 2, [3, 2]),
    ],
)
def test_split_costs_on_known_examples(costs, n, expected):
    assert largest_group(costs, split_costs(costs, n)) == largest_group(costs, expected)


def test_split_costs_is_optimal_and_contiguous():
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        length = int(torch.randint(1, 8, (1,), generator=generator))
        costs = torch.randint(0, 20, (length,), generator=generator).tolist()
        for n in range(1, length + 1):
            sizes = split_costs(costs, n)
            assert len(sizes) == n and sum(sizes) == length and min(sizes) >= 1
            assert largest_group(costs, sizes) == brute_force_best(costs, n), (costs, n, sizes)


def test_split_costs_one_group_per_item_and_too_many_groups():
    """More groups than items is an internal error (the strategies' check refuses more stages than blocks first)."""
    assert split_costs([3.0, 1.0, 2.0], 3) == [1, 1, 1]
    assert split_costs([3.0, 1.0, 2.0], 1) == [3]
    with pytest.raises(AssertionError, match="cannot split 3 costs into 4 non-empty groups"):
        split_costs([3.0, 1.0, 2.0], 4)


def test_balance_by_parameters_on_the_resnet():
    sizes = balance_by_parameters(make_model(), 2)
    assert sum(sizes) == 6 and min(sizes) >= 1
    assert sizes == [4, 2], "block 4 holds most parameters: it and the head against the rest"


def test_balance_by_time_leaves_the_model_untouched():
    model = make_model()
    before = {name: value.clone() for name, value in model.state_dict().items()}
    sizes = choose_cut(model, "time", 3, torch.rand(4, 1, 12, 12)).sizes
    assert sum(sizes) == 6 and len(sizes) == 3 and min(sizes) >= 1
    assert all(p.grad is None for p in model.parameters())
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value, before[name], rtol=0, atol=0)


def test_cut_keeps_blocks_and_state_dict_keys():
    model = make_model().eval()
    stages = cut(model, [2, 3, 1])
    assert [len(stage) for stage in stages] == [2, 3, 1]
    assert [block for stage in stages for block in stage] == list(model)
    assert all(a is b for a, b in zip((block for stage in stages for block in stage), model))
    merged = {name: value for stage in stages for name, value in stage.state_dict().items()}
    assert list(merged) == list(model.state_dict())
    assert all(merged[name].data_ptr() == value.data_ptr() for name, value in model.state_dict().items())
    inputs = torch.rand(2, 1, 12, 12)
    torch.testing.assert_close(stages[2](stages[1](stages[0](inputs))), model(inputs))


def test_cut_rejects_sizes_that_do_not_cover_the_model():
    with pytest.raises(ValueError):
        cut(make_model(), [3, 2])
    with pytest.raises(ValueError):
        cut(make_model(), [6, 0])


def test_a_warm_worker_times_a_model_on_a_sample_once_and_cuts_every_round_alike(monkeypatch):
    measured = []

    def fake_times(model, sample_inputs, repeats):
        measured.append(tuple(sample_inputs.shape))
        return partition.BlockCosts([float(len(measured))] * len(model), [1] * (len(model) - 1))

    monkeypatch.setattr(partition, "_measured_block_times", fake_times)
    model, sample = make_model(), torch.rand(4, 1, 12, 12)
    assert partition.block_costs(model, sample) != partition.block_costs(model, sample), "outside: timed each call"
    with partition.remembered_block_times():
        first = partition.block_costs(model, sample)
        assert partition.block_costs(make_model(), torch.rand(4, 1, 12, 12)) == first, "the same model and sample"
        assert partition.block_costs(model, torch.rand(2, 1, 12, 12)) != first, "another sample shape: timed again"
    assert measured == [(4, 1, 12, 12)] * 3 + [(2, 1, 12, 12)]
    assert partition.block_costs(model, sample) != first, "after it: timed again"


def test_a_cut_records_the_activation_that_crosses_each_boundary_and_what_each_block_takes_and_leaves():
    """Blocks whose outputs hold 8, 16 and 2 floats a sample, on 3 samples: cut by parameters into [1, 2] (40 against
    144 + 34 parameters), the boundary carries the first block's output, 3 x 8 x 4 bytes; a unit leaves 32 and 64
    bytes after the first two blocks, and every block's seconds are recorded (what a cut into other stages would
    take)."""
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 16), nn.Linear(16, 2))
    chosen = choose_cut(model, "parameters", 2, torch.randn(3, 4))
    assert chosen.sizes == [1, 2]
    assert chosen.boundary_bytes == [3 * 8 * 4] and chosen.block_output_bytes_per_unit == [32, 64]
    assert len(chosen.block_seconds) == 3 and min(chosen.block_seconds) > 0
    assert chosen.stage_seconds == [chosen.block_seconds[0], sum(chosen.block_seconds[1:])]
    assert chosen.details()["boundary_bytes"] == [96]


def test_the_first_block_is_timed_as_the_model_runs_it_without_its_input_s_gradient():
    """The first block's input is the data, whose gradient the model never computes: timing it would add a sixth to
    miniImageNet's first block. Every later block's backward computes its input's gradient, as in the model."""
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    needs = {0: set(), 1: set()}
    for index, block in enumerate(model):
        block.register_forward_pre_hook(lambda module, args, index=index: needs[index].add(args[0].requires_grad))
    partition.block_costs(model, torch.randn(3, 4), repeats=1)
    assert needs[0] == {False} and True in needs[1]


@pytest.mark.parametrize(("shares", "timings"), [([0.5, 0.0], 2), ([0.05], 1), ([None], 1)])
def test_blocks_timed_while_other_programs_took_the_cpu_are_timed_again_once(monkeypatch, shares, timings):
    """As a benchmark run is: the cut and the prediction rest on these times; a share /proc/stat cannot tell keeps
    them."""
    told = iter(shares)
    seen = []
    monkeypatch.setattr(partition, "other_cpu_share", lambda *marks: seen.append(marks) or next(told))
    clock = itertools.count()
    monkeypatch.setattr(partition, "_forward_backward_seconds", lambda *args: float(next(clock)))
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    times = partition.block_costs(model, torch.randn(3, 4), repeats=1).seconds
    assert len(seen) == timings
    # a round times each block once, the first round left out: block 0, block 1, then block 0, block 1 again
    assert times == ([6.0, 7.0] if timings == 2 else [2.0, 3.0]), "the last timing's medians (1 warm-up + 1 timed)"
