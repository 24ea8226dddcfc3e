"""Quality with its uncertainty: a mean over test items with its 95% interval, and two models compared item by item.

Both models of a comparison are scored on the same test items (the same images, the same fixed episodes), so
their difference is measured per item: the paired difference's interval is far narrower than the two accuracies'
intervals side by side, and it is the one that says whether a strategy changed what the model learnt.
"""

import math
from fractions import Fraction

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
    return {"delta": delta, "ci95_low": delta - half_width, "ci95_high": delta + half_width, "items": len(run),
            "mcnemar_p": mcnemar_p(run, reference) if binary else None}


def in_words(comparison: dict[str, float | int | None], run: str, reference: str) -> str:
    """The paired difference as a reader needs it: detectable or not, by how much, from how many items."""
    low, high, delta = comparison["ci95_low"], comparison["ci95_high"], comparison["delta"]
    assert low is not None and high is not None and delta is not None
    interval = f"{delta:+.3f}, 95% interval {low:+.3f} to {high:+.3f} over {comparison['items']:,} paired test items"
    if low <= 0 <= high:
        return f"no detectable difference between {run} and {reference} ({interval})"
    better, worse = (run, reference) if delta > 0 else (reference, run)
    return f"{better} scores higher than {worse} ({interval})"
