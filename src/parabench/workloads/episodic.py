"""What few-shot workloads share: scoring relation scores against query targets, and the accuracy interval."""

import math
import statistics

import torch
from torch import Tensor
from torch.nn import functional as F

Z_95 = 1.96  # two-sided 95% quantile of the normal distribution


def relation_loss(scores: Tensor, targets: Tensor) -> Tensor:
    """Mean squared error of relation scores (E, Q, W) against one-hot query targets (E, Q), as Sung et al."""
    return F.mse_loss(scores, F.one_hot(targets, scores.shape[-1]).to(scores.dtype))


def episode_accuracies(scores: Tensor, targets: Tensor) -> Tensor:
    """Per episode: the share of its queries whose highest relation score is their own way."""
    return (scores.argmax(dim=-1) == targets).to(torch.float32).mean(dim=-1)


def mean_and_interval(accuracies: list[float]) -> tuple[float, float]:
    """Mean accuracy over episodes and its 95% interval half-width, 1.96 sigma / sqrt(episodes).

    sigma is the sample standard deviation of the per-episode accuracies (0 for a single episode).
    """
    mean = statistics.fmean(accuracies)
    sigma = statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0
    return mean, Z_95 * sigma / math.sqrt(len(accuracies))
