"""Quality with its uncertainty: the mean's interval, the paired difference, the exact McNemar test, the words; and
timings: a ratio of step times paired by round."""

import math

import pytest
import torch

from parabench.stats import in_words, mcnemar_p, mean_and_interval, paired_difference, ratio_interval


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


def test_a_ratio_of_step_times_pairs_rounds_so_the_machine_s_drift_between_rounds_cancels():
    """single and ddp ran back to back in each round while the machine slowed down by half; ddp got a fourth round in
    the slow phase. Pooling every step would give 0.3 / 0.175 = 1.71."""
    single = [[0.2, 0.2], [0.3, 0.3], [0.4, 0.4]]
    ddp = [[0.1, 0.1], [0.15, 0.15], [0.2, 0.2], [0.2, 0.2]]
    assert ratio_interval(single, ddp) == pytest.approx((2.0, 2.0, 2.0))


def test_one_disturbed_round_moves_neither_the_ratio_nor_its_interval_far():
    single = [[0.20, 0.21], [0.20, 0.22], [0.80, 0.90]]  # another program took the machine in round 3
    ddp = [[0.10, 0.11], [0.10, 0.11], [0.10, 0.11]]
    point, low, high = ratio_interval(single, ddp)
    assert point == pytest.approx(0.21 / 0.105) and 1.85 < low <= point <= high < 2.25, "round 2 is the middle one"


def test_rounds_that_disagree_widen_the_interval():
    steady = ratio_interval([[0.20, 0.21]] * 3, [[0.10, 0.11]] * 3)
    unsteady = ratio_interval([[0.20, 0.21]] * 3, [[0.10, 0.11], [0.12, 0.13], [0.14, 0.15]])
    assert unsteady[2] - unsteady[1] > steady[2] - steady[1]
    with pytest.raises(ValueError, match="at least one round"):
        ratio_interval([], [[0.1]])
