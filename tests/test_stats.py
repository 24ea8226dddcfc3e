"""Quality with its uncertainty: the mean's interval, the paired difference, the exact McNemar test, the words; and
timings: a ratio of step times paired by turn, its interval, and whether two estimates of one ratio agree."""

import math
import statistics

import numpy as np
import pytest
import torch

from parabench.stats import (
    block_length,
    estimates_agree,
    in_words,
    mcnemar_p,
    mean_and_interval,
    median_interval,
    paired_difference,
    ratio_interval,
)


def outcomes(both: int, only_run: int, only_reference: int, neither: int) -> tuple[torch.Tensor, torch.Tensor]:
    """0/1 outcomes of two classifiers on the same items, in four groups."""
    run = [1.0] * both + [1.0] * only_run + [0.0] * only_reference + [0.0] * neither
    reference = [1.0] * both + [0.0] * only_run + [1.0] * only_reference + [0.0] * neither
    return torch.tensor(run), torch.tensor(reference)


def test_the_exact_mcnemar_p_value_counts_only_the_items_one_model_got_right():
    run, reference = outcomes(both=500, only_run=10, only_reference=2, neither=300)
    assert mcnemar_p(run, reference) == pytest.approx(2 * (1 + 12 + 66) / 2**12)  # binomial(12, 1/2), by hand
    assert mcnemar_p(*outcomes(both=40, only_run=0, only_reference=0, neither=10)) == 1.0, "nothing tells them apart"
    assert mcnemar_p(*outcomes(both=1, only_run=3, only_reference=3, neither=1)) == 1.0
    assert mcnemar_p(*outcomes(both=0, only_run=2000, only_reference=1900, neither=0)) < 0.2, "no overflow"


def test_a_paired_difference_is_narrower_than_two_independent_intervals():
    """Two classifiers that agree on most of 10,000 images: each accuracy's interval is about +-0.009, but the
    per-item difference, 60 against 40 disagreements, has an interval of about +-0.0039."""
    run, reference = outcomes(both=8000, only_run=60, only_reference=40, neither=1900)
    compared = paired_difference(run, reference)
    assert compared["delta"] == pytest.approx(0.002) and compared["items"] == 10_000
    half = (compared["ci95_high"] - compared["ci95_low"]) / 2
    sigma = math.sqrt((100 - 10_000 * 0.002**2) / 9_999)  # the differences: 60 of +1, 40 of -1, the rest 0
    assert half == pytest.approx(1.96 * sigma / 100)
    assert half < mean_and_interval(run)[1] / 2
    assert compared["mcnemar_p"] == pytest.approx(0.0573, abs=5e-4)


def test_episodes_pair_up_by_their_accuracies_and_get_no_mcnemar_test():
    run, reference = torch.tensor([0.4, 0.6, 0.2, 0.8]), torch.tensor([0.2, 0.6, 0.2, 0.4])
    compared = paired_difference(run, reference)
    assert compared["delta"] == pytest.approx(0.15) and compared["mcnemar_p"] is None
    with pytest.raises(ValueError, match="the same items"):
        paired_difference(run, reference[:3])


def test_the_difference_in_words_says_when_it_cannot_be_told_from_zero():
    unclear = paired_difference(*outcomes(both=800, only_run=12, only_reference=10, neither=178))
    assert in_words(unclear, "ddp", "single").startswith("no detectable difference between ddp and single (+0.002")
    assert "over 1,000 paired test items" in in_words(unclear, "ddp", "single")
    clear = paired_difference(*outcomes(both=800, only_run=5, only_reference=60, neither=135))
    assert in_words(clear, "ddp", "single").startswith("single scores higher than ddp (-0.055, 95% interval -0.")


def test_a_ratio_of_step_times_pairs_turns_so_the_machine_s_drift_between_turns_cancels():
    """single and ddp ran within a second of each other in each turn while the machine slowed down by half; ddp got a
    fourth turn in the slow phase. Pooling every step would give 0.3 / 0.175 = 1.71."""
    single = [[0.2, 0.2], [0.3, 0.3], [0.4, 0.4]]
    ddp = [[0.1, 0.1], [0.15, 0.15], [0.2, 0.2], [0.2, 0.2]]
    assert ratio_interval(single, ddp) == pytest.approx((2.0, 2.0, 2.0))


def test_one_disturbed_turn_among_many_is_trimmed_and_widens_the_interval_toward_it():
    """Another program took the machine in one turn of ten: the trimmed mean sets it aside, the interval leans its
    way (the blocks that draw it twice) without claiming 8x."""
    single = [[0.20, 0.21]] * 9 + [[0.80, 0.90]]
    ddp = [[0.10, 0.105]] * 10
    point, low, high = ratio_interval(single, ddp)
    quiet = ratio_interval(single[:9], ddp[:9])
    assert point == pytest.approx(0.205 / 0.1025), "the quiet turns' ratio"
    assert low <= point < high < 8 and high > quiet[2]


def test_an_interval_holds_what_its_turns_span_so_a_re_run_falls_inside_it():
    """Run 22's fashion_mnist rounds, as three turns (single, ddp: seconds per step). Within each the two steps agree;
    between them ddp/single went 0.89, 1.21, 1.10. Resampling the steps alone gave 1.06-1.15, excluding 1, and the
    next run measured 0.96; resampled at both levels, the interval holds every turn's ratio and 1."""
    single = [[0.200, 0.187], [0.239, 0.220], [0.211, 0.199]]
    ddp = [[0.216, 0.217], [0.200, 0.180], [0.184, 0.188]]
    point, low, high = ratio_interval(single, ddp)
    per_turn = [statistics.median(s) / statistics.median(d) for s, d in zip(single, ddp, strict=True)]
    assert point == pytest.approx(statistics.geometric_mean(per_turn))
    assert min(per_turn) < low < 1 < high
    fsdp = [[1.033, 1.061], [1.212, 1.626], [0.767, 0.727]]  # run 22's resnet50 fsdp: its rounds disagree by 2x
    median, low, high = median_interval(fsdp)
    assert low <= 0.77 and high >= 1.21 and low < median < high


def test_turns_that_disagree_widen_the_interval():
    steady = ratio_interval([[0.20, 0.21]] * 3, [[0.10, 0.11]] * 3)
    unsteady = ratio_interval([[0.20, 0.21]] * 3, [[0.10, 0.11], [0.12, 0.13], [0.14, 0.15]])
    assert unsteady[2] - unsteady[1] > steady[2] - steady[1]
    with pytest.raises(ValueError, match="at least one turn"):
        ratio_interval([], [[0.1]])


def drifting(turns: int, seed: int, ratio: float = 1.25) -> tuple[list[list[float]], list[list[float]]]:
    """Two cells' steps, one a turn, on a machine whose speed wanders from turn to turn (shared by both) with 5% of
    noise of each step's own: the second is `ratio` times faster."""
    generator = np.random.default_rng(seed)
    machine = np.exp(np.cumsum(generator.normal(0, 0.03, turns)))
    base = 0.2 * machine * np.exp(generator.normal(0, 0.05, turns))
    other = 0.2 / ratio * machine * np.exp(generator.normal(0, 0.05, turns))
    return [[float(step)] for step in base], [[float(step)] for step in other]


def test_the_estimator_narrows_with_more_turns_and_its_interval_holds_the_truth():
    """With a drifting machine and noisy steps, 40 turns know the ratio about twice as well as 10, and in 20 draws of
    the machine the 95% interval holds the true ratio in at least 17 (the block bootstrap keeps the drift in it)."""
    widths = {}
    for turns in (10, 40):
        estimates = [ratio_interval(*drifting(turns, seed)) for seed in range(20)]
        widths[turns] = statistics.median(math.log(high / low) for _, low, high in estimates)
        assert sum(low <= 1.25 <= high for _, low, high in estimates) >= 17
    assert widths[40] < 0.65 * widths[10]


def test_turns_are_drawn_in_blocks_of_about_the_cube_root_of_their_number():
    assert [block_length(turns) for turns in (1, 8, 27, 64, 100)] == [1, 2, 3, 4, 5]


def test_two_estimates_agree_when_their_gap_is_within_their_intervals_combined():
    """Each outside the other's interval, yet within the two half-widths combined in quadrature: the same thing
    measured twice; intervals that barely touch are not (overlap would accept a gap of both half-widths added)."""
    assert estimates_agree((1.0, 0.95, 1.05), (1.0, 0.95, 1.05))
    assert estimates_agree((1.0, 0.95, 1.05), (1.06, 1.01, 1.11))
    assert estimates_agree((1.06, 1.01, 1.11), (1.0, 0.95, 1.05)), "the order of the two does not matter"
    assert not estimates_agree((1.0, 0.95, 1.05), (1.10, 1.05, 1.15)), "touching intervals: a gap of 10%"
    assert not estimates_agree((1.5, 1.47, 1.53), (2.0, 1.96, 2.04))


def test_the_half_width_that_counts_is_the_one_facing_the_other_estimate():
    """A long tail away from the other estimate buys no agreement; one toward it does."""
    assert not estimates_agree((1.0, 0.5, 1.02), (1.1, 1.08, 1.2))
    assert estimates_agree((1.0, 0.98, 1.2), (1.1, 1.0, 1.12))
