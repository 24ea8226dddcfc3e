"""Where a benchmark cell's step goes: its median step split into measured parts that add up to it.

Every rank of a cell marks where its own step's phases end (engine.timing.PHASES: input, forward_backward,
optimizer; devices synchronised at each mark). Per timed step, each phase is averaged over the ranks, and `idle` is
how long a rank waited, on average, for the slowest one (a parallel step ends when its last rank does), so a step's
parts add up to that step exactly. The split is the parts' mean over the cell's typical steps (the central half by
duration, where the median step lies), checked to add up to the median step within ADDS_UP_WITHIN.

Forward and backward are split by a difference. Where a run has no communication (one device, or the ceiling's
independent copies) they are `compute`. A data-parallel strategy's replicas each do what a ceiling copy does, on the
same share of the batch under the same load, plus communication: the ceiling copies' typical forward and backward is
its `compute`, and the rest of its own is `communication`, the part of it not hidden behind compute. Beside it,
`gradient_allreduce_s` (one all-reduce of every gradient at once, timed in the cell) is what communication would
cost with none of it hidden: ddp and allreduce move exactly that, so `communication_hidden_share` = 1 - exposed /
full. On a CPU the exposed part can exceed that standalone cost (gloo's threads take cores from the compute threads
while they run), and then nothing was hidden. A cut model (model_parallel, pipeline) is split from its stages'
forward and backward seconds, measured on one micro-batch (the whole batch for model_parallel) when the strategy cut
the model (`stage_seconds`). Where the stages can overlap (the distributed engine, or in-process on real devices),
the slowest stage works m micro-batches and waits, at least, while every other stage takes the first micro-batch
forward and the last one back: no schedule beats m x slowest + (sum - slowest). That is the work shared evenly
(`compute`, m x the mean stage), the `imbalance` (m x (slowest - mean)) and the `bubble` (sum - slowest; (S - 1) x
slowest for S equal stages, torchgpipe's and seed 001's figure). model_parallel on real devices runs its stages in
turn: `compute` is their sum. What forward and backward took beyond that is `communication`: moving activations and
gradients between stages and the schedule's own work. One process on one CPU (in-process stages on virtual devices)
moves nothing and runs its stages in turn on the same cores: all of its forward and backward is `compute` (its
blocks timed one by one in a sandbox add up to 10-20% more than the whole pass, so they are not used there). Where
none of this applies (a data-parallel strategy without a ceiling beside it), the part stays `forward_backward`,
communication included.
"""

import statistics
from typing import Any

from parabench.engine.timing import PHASES
from parabench.records import CellRun
from parabench.runtime.step_signs import kept_phases, kept_steps
from parabench.strategies.base import Strategy

ADDS_UP_WITHIN = 0.05  # the parts' sum against the median step, relative

PART_MEANINGS = {
    "input": "the batch moved to the device and the workload's transform",
    "compute": "forward and backward, no communication",
    "imbalance": "a pipeline's stages waiting for its slowest: micro-batches x (slowest - mean stage)",
    "bubble": "a pipeline filling and draining: the other stages' time while its slowest waits",
    "communication": "what communication adds to forward and backward: the part not hidden behind compute",
    "forward_backward": "forward and backward, communication included (not separable here)",
    "optimizer": "the update and the learning-rate schedule",
    "idle": "waiting for the slowest rank",
}


def step_parts(phase_durations: list[list[dict[str, float]]]) -> list[dict[str, float]]:
    """Per timed step, from every rank's phases: each phase averaged over the ranks, and `idle`, how long a rank
    waited on average for the slowest; the parts of a step add up to its slowest rank's time."""
    parts = []
    for ranks in zip(*phase_durations, strict=True):
        own = [sum(phases.values()) for phases in ranks]
        slowest = max(own)
        parts.append(
            {
                **{phase: statistics.fmean(phases[phase] for phases in ranks) for phase in PHASES},
                "idle": statistics.fmean(slowest - time for time in own),
            }
        )
    return parts


def typical_parts(run: CellRun) -> dict[str, float]:
    """Each part's mean over the typical steps of a cell's turns (its disturbed steps left out): the central half of
    its kept steps by duration, where its median step lies (a part's own median would not add up with the others')."""
    steps = sorted(
        (parts for phases in kept_phases(run.turns) for parts in step_parts(phases)),
        key=lambda parts: sum(parts.values()),
    )
    typical = steps[len(steps) // 4 : len(steps) - len(steps) // 4]
    return {part: statistics.fmean(step[part] for step in typical) for part in typical[0]}


def time_split(
    run: CellRun, strategy: Strategy, communicates: bool, data_parallel: bool, compute_beside: float | None
) -> dict[str, Any]:
    """The split of a cell's median step: `communicates` false for a run with nothing to communicate (one device,
    the ceiling's copies); `compute_beside`, for a data-parallel strategy, the ceiling copies' forward and backward
    on the same devices (None where no comparable ceiling ran)."""
    parts = typical_parts(run)
    forward_backward = parts.pop("forward_backward")
    split = {"input": parts["input"]}
    cut = strategy.details_of(run.strategy_details).time_parts(forward_backward)
    if not communicates:
        split["compute"] = forward_backward
    elif cut is not None:
        split |= cut
    elif data_parallel and compute_beside is not None:
        split["compute"] = min(compute_beside, forward_backward)
        split["communication"] = forward_backward - split["compute"]
    else:
        split["forward_backward"] = forward_backward
    split |= {"optimizer": parts["optimizer"], "idle": parts["idle"]}
    step = statistics.median(duration for turn in kept_steps(run.turns) for duration in turn)
    full = run.gradient_allreduce_s
    hidden = None
    if "communication" in split and full and strategy.all_reduces_gradients:
        hidden = min(1.0, max(0.0, 1 - split["communication"] / full))
    return {
        "time_split_s": split,
        "time_split_vs_step": sum(split.values()) / step - 1,
        "time_split_adds_up": abs(sum(split.values()) / step - 1) <= ADDS_UP_WITHIN,
        "gradient_allreduce_s": full,
        "communication_share": split["communication"] / step if "communication" in split else None,
        "communication_hidden_share": hidden,
    }
