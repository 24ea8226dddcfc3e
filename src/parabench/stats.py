"""Uncertainty: a mean over test items with its 95% interval, two models compared item by item, and a median step
time or a ratio of two with its bootstrap interval against the run's own noise floor.

Both models of a comparison are scored on the same test items (the same images, the same fixed episodes), so
their difference is measured per item: the paired difference's interval is far narrower than the two accuracies'
intervals side by side, and it is the one that says whether a strategy changed what the model learnt.
"""

import math
import statistics
from fractions import Fraction
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

Z_95 = 1.96  # two-sided 95% quantile of the normal distribution


def mean_and_interval(values: Tensor) -> tuple[float, float]:
    """The mean of per-item values and its 95% interval half-width, 1.96 sigma / sqrt(items).

    sigma is the sample standard deviation (0 for a single item): for 0/1 outcomes this is the Wald interval of a
    proportion, for per-episode accuracies the interval few-shot papers quote.
    """
    values = values.double()
    sigma = float(values.std()) if len(values) > 1 else 0.0
    return float(values.mean()), Z_95 * sigma / math.sqrt(len(values))


def mcnemar_p(run: Tensor, reference: Tensor) -> float:
    """Exact McNemar test of two classifiers' 0/1 outcomes on the same items: the two-sided binomial p-value of the
    items only one of them got right (1.0 when no item tells them apart)."""
    only_run = int(((run == 1) & (reference == 0)).sum())
    only_reference = int(((run == 0) & (reference == 1)).sum())
    discordant = only_run + only_reference
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(min(only_run, only_reference) + 1))
    return min(1.0, float(Fraction(2 * tail, 2**discordant)))


def paired_difference(run: Tensor, reference: Tensor) -> dict[str, float | int | None]:
    """The run's mean per-item score minus the reference's, on the same items, with its 95% interval (normal, from
    the per-item differences) and, for 0/1 outcomes, the exact McNemar p-value."""
    if run.shape != reference.shape:
        raise ValueError(f"paired scores need the same items: {tuple(run.shape)} against {tuple(reference.shape)}")
    delta, half_width = mean_and_interval(run.double() - reference.double())
    binary = bool(torch.isin(torch.cat([run, reference]), torch.tensor([0.0, 1.0], dtype=run.dtype)).all())
    return {
        "delta": delta,
        "ci95_low": delta - half_width,
        "ci95_high": delta + half_width,
        "items": len(run),
        "mcnemar_p": mcnemar_p(run, reference) if binary else None,
    }


def in_words(comparison: dict[str, float | int | None], run: str, reference: str) -> str:
    """The paired difference as a reader needs it: detectable or not, by how much, from how many items."""
    low, high, delta = comparison["ci95_low"], comparison["ci95_high"], comparison["delta"]
    assert low is not None and high is not None and delta is not None
    interval = f"{delta:+.3f}, 95% interval {low:+.3f} to {high:+.3f} over {comparison['items']:,} paired test items"
    if low <= 0 <= high:
        return f"no detectable difference between {run} and {reference} ({interval})"
    better, worse = (run, reference) if delta > 0 else (reference, run)
    return f"{better} scores higher than {worse} ({interval})"


# ---- timings: a median step with its interval, a ratio of two with its interval, and the run's noise floor ----

RESAMPLES = 2000  # bootstrap resamples: the interval's ends move by well under 1% between seeds
TRIM = 0.1  # a ratio's turns trimmed at each end before their mean: a few wild turns cannot move it
# Both intervals resample at two levels (the hierarchical bootstrap of nested data): the turns in blocks of consecutive
# ones (a circular block bootstrap), then each drawn turn's steps within itself. Within a turn a cell's steps agree to
# a few percent; across turns the machine drifts, and two cells' ratio drifts with it over tens of seconds (the
# machine's state favours one process layout, then another: docs/metrics.md). Turns drawn one at a time would treat
# those as independent and give intervals that the next run's figure falls outside; blocks of about the cube root of
# the turns keep that drift in the interval.


def _resampled_steps(steps: list[float], generator: np.random.Generator, width: int) -> np.ndarray:
    """RESAMPLES draws of one turn's steps with replacement, NaN-padded to `width` columns."""
    drawn = np.full((RESAMPLES, width), np.nan)
    drawn[:, : len(steps)] = np.asarray(steps)[generator.integers(0, len(steps), (RESAMPLES, len(steps)))]
    return drawn


def block_length(turns: int) -> int:
    """Consecutive turns drawn together: about the cube root of the turns (the usual rate for a block bootstrap)."""
    return max(1, round(math.pow(turns, 1 / 3)))


def _drawn_turns(count: int, generator: np.random.Generator) -> np.ndarray:
    """For each resample, which of `count` turns fills each of its `count` places: blocks of block_length(count)
    consecutive turns from random starts, wrapping around at the end (the circular block bootstrap)."""
    length = block_length(count)
    blocks = -(-count // length)
    starts = generator.integers(0, count, (RESAMPLES, blocks))
    return ((starts[:, :, None] + np.arange(length)) % count).reshape(RESAMPLES, -1)[:, :count]


def _resampled_medians(turns: list[list[float]], generator: np.random.Generator) -> np.ndarray:
    """RESAMPLES bootstrap medians of a cell's steps, every turn together: turns drawn in blocks, each drawn turn's
    steps resampled within itself."""
    kept = [steps for steps in turns if steps]
    width = max(len(steps) for steps in kept)
    draws = np.stack([_resampled_steps(steps, generator, width) for steps in kept])  # turn, resample, step
    chosen = draws[_drawn_turns(len(kept), generator), np.arange(RESAMPLES)[:, None]]  # resample, place, step
    medians: np.ndarray = np.nanmedian(chosen.reshape(RESAMPLES, -1), axis=1)
    return medians


def median_interval(turns: list[list[float]], seed: int = 0) -> tuple[float, float, float]:
    """The median of all steps, and its 95% bootstrap interval (percentile; turns in blocks, then steps within them).
    Turns with no steps left (every one disturbed) are left out."""
    if not any(turns):
        raise ValueError("a median step needs at least one step")
    medians = _resampled_medians(turns, np.random.default_rng(seed))
    low, high = np.percentile(medians, [2.5, 97.5])
    return float(np.median(np.concatenate([np.asarray(steps) for steps in turns]))), float(low), float(high)


class TimedCell(Protocol):
    """What a rate ratio reads of a timed cell (records.CellFigures): its steps turn by turn, and its batch."""

    @property
    def step_durations_by_turn(self) -> list[list[float]]: ...

    @property
    def global_batch(self) -> int: ...


def rate_ratio(figures: TimedCell, base: TimedCell) -> tuple[float, float, float]:
    """A cell's rate over another's, paired by turn (ratio_interval), with its 95% bootstrap interval (each global
    batch counted: under weak scaling the cells' batches differ)."""
    point, low, high = ratio_interval(base.step_durations_by_turn, figures.step_durations_by_turn)
    scale = figures.global_batch / base.global_batch
    return point * scale, low * scale, high * scale


def trimmed_mean(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """The mean along `axis` of what is left after TRIM of the values at each end are set aside."""
    ordered = np.sort(values, axis=axis)
    cut = int(TRIM * ordered.shape[axis])
    kept: np.ndarray = np.take(ordered, np.arange(cut, ordered.shape[axis] - cut), axis=axis).mean(axis=axis)
    return kept


def ratio_interval(
    numerator: list[list[float]], denominator: list[list[float]], seed: int = 0
) -> tuple[float, float, float]:
    """How many times longer the numerator's steps are than the denominator's, paired by turn: in turn t both cells
    ran within seconds of each other, so the ratio of their medians there is free of the machine's drift between
    turns. The figure is the geometric mean of those per-turn ratios, TRIM of them set aside at each end, with its 95%
    bootstrap interval (the paired turns drawn in blocks, each drawn turn's steps resampled within themselves).
    Turns are paired by position; a turn that either cell has no steps of (every one disturbed, or never run) is left
    out. One turn of many steps each (two training runs) gives the ratio of their medians, its interval from the
    steps."""
    paired = [(top, bottom) for top, bottom in zip(numerator, denominator, strict=False) if top and bottom]
    if not paired:
        raise ValueError("a ratio of step times needs at least one turn of each cell")
    generator = np.random.default_rng(seed)
    logs = np.stack(
        [
            np.log(_resampled_turn_median(top, generator) / _resampled_turn_median(bottom, generator))
            for top, bottom in paired
        ]
    )  # turn, resample
    chosen = logs[_drawn_turns(len(paired), generator), np.arange(RESAMPLES)[:, None]]  # resample, place
    low, high = np.exp(np.percentile(trimmed_mean(chosen), [2.5, 97.5]))
    point = np.exp(trimmed_mean(np.log([statistics.median(top) / statistics.median(bottom) for top, bottom in paired])))
    return float(point), float(low), float(high)


def _resampled_turn_median(steps: list[float], generator: np.random.Generator) -> np.ndarray:
    """RESAMPLES bootstrap medians of one turn's steps."""
    medians: np.ndarray = np.median(_resampled_steps(steps, generator, len(steps)), axis=1)
    return medians


def estimates_agree(first: tuple[float, float, float], second: tuple[float, float, float]) -> bool:
    """Whether two independent estimates of one ratio (each a point with its 95% interval) agree: their difference, on
    a log scale, is within the two intervals' half-widths combined in quadrature, each half-width taken on the side
    that faces the other estimate (the z-test of a difference, from asymmetric intervals). Stricter than asking that
    the intervals overlap, which lets two estimates differ by both half-widths added; about 1 pair in 20 of the same
    thing disagrees by chance."""
    (low_point, low_interval), (high_point, high_interval) = sorted([(first[0], first[1:]), (second[0], second[1:])])
    gap = math.log(high_point / low_point)
    return gap <= math.hypot(math.log(low_interval[1] / low_point), math.log(high_point / high_interval[0]))


def noise_floor(control_ratio: float) -> float:
    """How far from 1 the ratio of two cells running the very same thing (the A/A control) came out in this run: the
    difference this run made between identical cells (the processes they ran in, their places in the turns). A
    difference no larger than this is within the run's own noise. Not its interval's far end: every interval holds
    the turns' spread already (ratio_interval), and a floor that counted it again reached 65% in a run on a busy VM."""
    return abs(control_ratio - 1)


def ratio_verdict(ratio: tuple[float, float, float], floor: float | None) -> str:
    """`faster` or `slower` when a speedup's interval excludes 1 and it is farther from 1 than the noise floor (when
    one was measured); else `no detectable difference`."""
    point, low, high = ratio
    beyond_floor = floor is None or abs(point - 1) > floor
    if low > 1 and beyond_floor:
        return "faster"
    if high < 1 and beyond_floor:
        return "slower"
    return NO_DIFFERENCE


NO_DIFFERENCE = "no detectable difference"
