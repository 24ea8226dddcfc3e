"""Cutting a model's ordered blocks into consecutive stages: balanced by parameters or measured time, or as the
seed document cuts it; each stage's measured share of the time is kept either way."""

import contextlib
import copy
import logging
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import torch
from pydantic import Field
from torch import Tensor, nn

from parabench.runtime.collectives import synchronize
from parabench.runtime.load import CONTENDED_SHARE, mark, other_cpu_share
from parabench.strategies.details import Details

log = logging.getLogger("parabench.partition")
TIMING_REPEATS = 5
_remembered: dict[tuple[object, ...], "BlockCosts"] | None = None  # see remembered_block_times


def split_costs(costs: Sequence[float], n: int) -> list[int]:
    """Sizes of `n` contiguous, non-empty groups of `costs` whose largest group sum is as small as possible.

    Exact dynamic programme over (groups, leading items): best[k][j] is the smallest possible largest
    group when the first j items form k groups. No more groups than items: the strategies' check refuses more stages
    than blocks (stage_devices.check_stages) before any cut.
    """
    assert 1 <= n <= len(costs), f"cannot split {len(costs)} costs into {n} non-empty groups"
    prefix = list(accumulate(costs, initial=0))
    items = len(costs)
    best = [[float("inf")] * (items + 1) for _ in range(n + 1)]
    last_start = [[0] * (items + 1) for _ in range(n + 1)]
    best[0][0] = 0
    for groups in range(1, n + 1):
        for end in range(groups, items + 1):
            for start in range(groups - 1, end):
                largest = max(best[groups - 1][start], prefix[end] - prefix[start])
                if largest < best[groups][end]:
                    best[groups][end], last_start[groups][end] = largest, start
    sizes, end = [], items
    for groups in range(n, 0, -1):
        start = last_start[groups][end]
        sizes.append(end - start)
        end = start
    return sizes[::-1]


def balance_by_parameters(model: nn.Sequential, n: int) -> list[int]:
    """Blocks per stage such that the largest stage holds as few parameters as possible."""
    return split_costs([sum(p.numel() for p in block.parameters()) for block in model], n)


@dataclass(frozen=True)
class BlockCosts:
    """Each block's median forward+backward seconds on a sample, and the bytes of each block's output but the last's
    there: what a stage boundary after that block sends forward (and its gradient, as large, back)."""

    seconds: list[float]
    output_bytes: list[int]


@contextlib.contextmanager
def remembered_block_times() -> Iterator[None]:
    """Within it, block_costs times a model (its blocks' kinds and parameter shapes) on a sample (its shape, device,
    threads) once, and hands back the same times after: a benchmark job cuts every cell of one model alike,
    and its later cells skip the timing (several forward and backward passes of the whole model each)."""
    global _remembered
    _remembered = {}
    try:
        yield
    finally:
        _remembered = None


def block_costs(model: nn.Sequential, sample_inputs: Tensor, repeats: int = TIMING_REPEATS) -> BlockCosts:
    """Median forward+backward seconds of each block on `sample_inputs`'s device, as torchgpipe measures them, and
    the bytes each block's output holds there.

    Each block runs as a copy on that device, one block at a time (a sandbox: the model's weights,
    gradients and BatchNorm statistics are untouched), in 1 + `repeats` rounds of every block, the first left out;
    each block's input is the previous block's output. Within remembered_block_times, once per model and sample.
    """
    if _remembered is None:
        return _measured_block_times(model, sample_inputs, repeats)
    key = (
        tuple((type(block).__name__, *(tuple(p.shape) for p in block.parameters())) for block in model),
        tuple(sample_inputs.shape),
        sample_inputs.dtype,
        str(sample_inputs.device),
        torch.get_num_threads(),
        repeats,
    )
    if key not in _remembered:
        _remembered[key] = _measured_block_times(model, sample_inputs, repeats)
    return _remembered[key]


def _measured_block_times(model: nn.Sequential, sample_inputs: Tensor, repeats: int) -> BlockCosts:
    """Each block's median forward+backward seconds, timed again once where other programs took more than
    CONTENDED_SHARE of the CPU meanwhile (as a benchmark run is: the cut and the prediction rest on these times)."""
    costs, others = _timed_blocks(model, sample_inputs, repeats)
    if others is not None and others > CONTENDED_SHARE:
        log.warning(
            "other programs took %.0f%% of the CPU while the blocks were timed: timing them again", 100 * others
        )
        costs, _ = _timed_blocks(model, sample_inputs, repeats)
    return costs


def _timed_blocks(model: nn.Sequential, sample_inputs: Tensor, repeats: int) -> tuple[BlockCosts, float | None]:
    """Each block's median forward+backward seconds and output bytes, and the share of the CPU other programs took
    meanwhile (None where /proc/stat cannot tell). The blocks are timed in rounds, every block once a round, the first
    round left out: a slow spell (a core waking, memory first touched) falls on every block alike rather than on the
    first one timed, as the benchmark's turns interleave its cells."""
    started = mark()
    sandboxes = [copy.deepcopy(block).to(sample_inputs.device) for block in model]
    inputs = [sample_inputs]  # each block's input: the previous block's output on the sample
    with torch.no_grad():
        for sandbox in sandboxes[:-1]:
            inputs.append(sandbox(inputs[-1]))
    durations: list[list[float]] = [[] for _ in sandboxes]
    for _ in range(1 + repeats):
        for index, (sandbox, block_input) in enumerate(zip(sandboxes, inputs, strict=True)):
            first = index == 0  # its input is the data, whose gradient the model never computes
            durations[index].append(_forward_backward_seconds(sandbox, block_input, not first))
    medians = [statistics.median(seconds[1:]) for seconds in durations]
    ended = mark()
    others = other_cpu_share(started, ended, ended.own_cpu - started.own_cpu)
    log.info(
        "%d blocks timed in %.1f s; other programs took %s of the CPU meanwhile",
        len(medians),
        ended.wall - started.wall,
        "an unknown share" if others is None else f"{others:.0%}",
    )
    return BlockCosts(medians, [output.numel() * output.element_size() for output in inputs[1:]]), others


def _forward_backward_seconds(block: nn.Module, inputs: Tensor, input_gradient: bool) -> float:
    """Wall time of one forward and backward of `block`, its device's queue drained before both clock reads; with
    `input_gradient`, the backward computes its input's gradient too, as it does for every block but the first (on
    miniImageNet's 84x84 episodes the first block's input gradient is a sixth of its time).

    The block gets a copy that is not a leaf: a block may begin in place (ReLU(inplace=True)), which a leaf that
    needs its gradient refuses, and the caller's activation stays as it was.
    """
    leaf = inputs.detach().requires_grad_(input_gradient and inputs.is_floating_point())
    fed = leaf.clone()
    synchronize(inputs.device)
    started = time.perf_counter()
    output = block(fed)
    output.backward(torch.ones_like(output))
    synchronize(inputs.device)
    return time.perf_counter() - started


@dataclass(frozen=True)
class StageCut:
    """Blocks per stage, how they were chosen, each stage's measured forward+backward seconds on the sample (one
    micro-batch, or the whole batch where there are none) and share of their sum, the bytes of the activation that
    crosses each boundary between stages on that sample; and what a cut into other stages would take and send: each
    block's seconds there, and the bytes a unit of the sample (a sample or an episode) leaves after each block but
    the last."""

    sizes: list[int]
    balance: str
    stage_seconds: list[float]
    boundary_bytes: list[int]
    block_seconds: list[float]
    block_output_bytes_per_unit: list[float]

    @property
    def stage_time_share(self) -> list[float]:
        """Each stage's share of the stages' summed forward+backward time."""
        return [stage / sum(self.stage_seconds) for stage in self.stage_seconds]

    def details(self) -> dict[str, Any]:
        """What the metrics record about the cut (CutDetails' fields)."""
        return {
            "cut": self.sizes,
            "balance": self.balance,
            "stage_time_share": [round(share, 4) for share in self.stage_time_share],
            "stage_seconds": [round(seconds, 6) for seconds in self.stage_seconds],
            "boundary_bytes": self.boundary_bytes,
            "block_seconds": [round(seconds, 6) for seconds in self.block_seconds],
            "block_output_bytes_per_unit": [round(size, 1) for size in self.block_output_bytes_per_unit],
        }


class CutDetails(Details):
    """What a cut model's run records of itself: its cut (StageCut's record), its stages and whether its devices are
    virtual (a CPU's), and how many micro-batches a step made where it feeds any."""

    cut: list[int] = Field(default_factory=list)
    balance: str = ""
    stage_time_share: list[float] = Field(default_factory=list)
    stage_seconds: list[float] = Field(default_factory=list)
    boundary_bytes: list[int] = Field(default_factory=list)
    block_seconds: list[float] = Field(default_factory=list)
    block_output_bytes_per_unit: list[float] = Field(default_factory=list)
    stages: int | None = None
    devices_virtual: bool = False
    micro_batches: int | None = None

    def stages_in_turn_on_one_cpu(self) -> bool:
        """Whether one process ran every stage on one CPU's cores: in turn, nothing moving between them."""
        return self.devices_virtual

    def stage_parts(self) -> dict[str, float]:
        """Its stages' seconds as parts of a step: one batch through them one after another."""
        return {"compute": (self.micro_batches or 1) * sum(self.stage_seconds)}

    def time_parts(self, forward_backward: float) -> dict[str, float] | None:
        """Its forward and backward split by its stages' measured seconds, the rest `communication` (none where the
        stages ran in turn on one CPU: all of it compute); None without stage times."""
        if not self.stage_seconds:
            return None
        if self.stages_in_turn_on_one_cpu():
            return {"compute": forward_backward}
        parts = self.stage_parts()
        return parts | {"communication": max(0.0, forward_backward - sum(parts.values()))}


def choose_cut(
    model: nn.Sequential, balance: str, stages: int, sample_inputs: Tensor, documented: Sequence[int] | None = None
) -> StageCut:
    """Cut by `balance` into `stages` stages, timing every block on the sample: `time` makes the slowest stage's
    forward+backward time smallest, `parameters` the largest stage's parameter count, `documented` is its source's cut
    (stage_devices.check_stages has checked that there is one, into `stages` stages)."""
    costs = block_costs(model, sample_inputs)
    if balance == "time":
        sizes = split_costs(costs.seconds, stages)
    elif balance == "parameters":
        sizes = balance_by_parameters(model, stages)
    else:
        assert documented is not None and len(documented) == stages, "checked by stage_devices.check_stages"
        sizes = list(documented)
    starts = list(accumulate(sizes, initial=0))
    return StageCut(
        sizes,
        balance,
        [sum(costs.seconds[start : start + size]) for start, size in zip(starts, sizes)],
        [costs.output_bytes[end - 1] for end in starts[1:-1]],
        costs.seconds,
        [size / len(sample_inputs) for size in costs.output_bytes],
    )


def cut(model: nn.Sequential, sizes: Sequence[int]) -> list[nn.Sequential]:
    """Stage i holds the next sizes[i] blocks: the model's own block objects under their own keys.

    A slice of an nn.Sequential keeps the blocks' names, so each stage's state_dict already uses the
    whole model's keys ("4.0.conv1.weight"), and the stages' state dicts together are the model's.
    """
    if sum(sizes) != len(model) or min(sizes) < 1:
        raise ValueError(f"the cut {list(sizes)} does not split the model's {len(model)} blocks into non-empty stages")
    starts = accumulate(sizes, initial=0)
    return [model[start : start + size] for start, size in zip(starts, sizes)]
