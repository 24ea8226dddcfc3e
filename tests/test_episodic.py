"""Scoring few-shot episodes: the relation loss, per-episode accuracy and the 95% interval formula."""

import math

import pytest
import torch

from parabench.stats import mean_and_interval
from parabench.workloads.episodic import episode_accuracies, relation_loss


def test_interval_is_1_96_sigma_over_the_root_of_the_episodes():
    accuracies = [0.2, 0.4, 0.4, 0.6, 1.0] * 120  # 600 episodes
    mean, interval = mean_and_interval(torch.tensor(accuracies))
    sigma = math.sqrt(sum((a - 0.52) ** 2 for a in accuracies) / (len(accuracies) - 1))
    assert mean == pytest.approx(0.52)
    assert interval == pytest.approx(1.96 * sigma / math.sqrt(600))
    assert interval == pytest.approx(0.021726, abs=1e-6)  # by hand: sqrt(44.16 / 599) * 1.96 / sqrt(600)
    assert mean_and_interval(torch.tensor([0.4], dtype=torch.float64)) == (0.4, 0.0)


def test_the_paper_reports_intervals_of_this_size():
    """Sung et al.'s 50.44 +- 0.82% over 600 episodes means a per-episode deviation of about 10%."""
    _, interval = mean_and_interval(torch.tensor([0.4044, 0.6044] * 300))
    assert interval == pytest.approx(0.0080, abs=2e-4)


def test_accuracy_per_episode_and_loss_against_one_hot_targets():
    scores = torch.tensor([[[0.9, 0.1], [0.2, 0.7]], [[0.3, 0.6], [0.8, 0.1]]])  # (E=2, Q=2, W=2)
    targets = torch.tensor([[0, 1], [0, 1]])
    assert episode_accuracies(scores, targets).tolist() == [1.0, 0.0]
    expected = ((0.1**2 + 0.1**2 + 0.2**2 + 0.3**2) + (0.7**2 + 0.6**2 + 0.8**2 + 0.9**2)) / 8
    assert relation_loss(scores, targets).item() == pytest.approx(expected)
