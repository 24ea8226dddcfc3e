"""What few-shot workloads share: scoring relation scores against query targets."""

import torch
from torch import Tensor
from torch.nn import functional as F


def relation_loss(scores: Tensor, targets: Tensor) -> Tensor:
    """Mean squared error of relation scores (E, Q, W) against one-hot query targets (E, Q), as Sung et al."""
    return F.mse_loss(scores, F.one_hot(targets, scores.shape[-1]).to(scores.dtype))


def episode_accuracies(scores: Tensor, targets: Tensor) -> Tensor:
    """Per episode: the share of its queries whose highest relation score is their own way."""
    return (scores.argmax(dim=-1) == targets).to(torch.float32).mean(dim=-1)
