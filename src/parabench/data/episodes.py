"""Few-shot episodes over one labelled split: seeded, addressable, model-agnostic.

In the spirit of learn2learn's task transforms (``NWays``, ``KShots`` over a labelled dataset), but small: an
:class:`EpisodeSampler` turns a split's labels into episodes of image INDICES, and knows nothing of images or
models. An episode depends only on ``(seed, stream, index)``: any process can build episode 17 of stream 3 on
its own, without drawing episodes 0-16 first and without touching any global RNG. That is how data-parallel
replicas each take their own episodes: the engine deals episode indices out to replicas with the same code
that deals sample indices, and each replica samples its indices here. Streams: the engine uses
``stream = epoch`` for training and fixed streams for validation and test.

Layout of one episode (what :mod:`parabench.models.relation` expects on dim 1):

- image indices, ``n_way * (n_shot + n_query)`` of them: the support set way-major (``n_shot`` images of way 0,
  then of way 1, ...), then the queries way-major (``n_query`` images of way 0, then of way 1, ...);
- query targets, ``n_way * n_query`` of them: the way (``0 .. n_way - 1``) of each query. With queries way-major
  these are always ``[0] * n_query + [1] * n_query + ...``; what is random is which class plays which way
  (the ``n_way`` classes are drawn in random order).

Randomness: a ``numpy.random.PCG64`` bit generator seeded with ``SeedSequence([seed, stream, index])``, whose
raw 64-bit output NumPy keeps stable across versions, drives a partial Fisher-Yates shuffle written here (NumPy's
``Generator`` methods such as ``choice`` do not promise the same stream across versions), so an episode is the
same on every machine and NumPy version. The modulo bias of ``draw % n`` is below ``n / 2**64``: negligible.
"""

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import SupportsIndex, cast

import numpy as np
import torch

_MAX_KEY = 2**32
"""seed, stream and index are each below 2**32: each is then one 32-bit word of the SeedSequence entropy, so
distinct (seed, stream, index) triples can never give the same generator state."""


def _non_negative_int(name: str, value: object, upper: int | None = None) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.dtype.is_floating_point or value.dtype.is_complex:
            raise TypeError(f"{name} must be an integer, got {value!r}")
        value = value.item()
    try:
        number = operator.index(cast(SupportsIndex, value))  # int, numpy integers; anything else raises
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if number < 0 or (upper is not None and number >= upper):
        bound = f" and below {upper}" if upper is not None else ""
        raise ValueError(f"{name} must be non-negative{bound}, got {number}")
    return number


@dataclass(frozen=True)
class EpisodeShape:
    """How many ways, support images per way (shots) and query images per way an episode has (params.yaml's, which its
    schema has checked: MiniImagenetSettings)."""

    n_way: int
    n_shot: int
    n_query: int

    @property
    def per_class(self) -> int:
        """Images drawn from each chosen class: ``n_shot + n_query``."""
        return self.n_shot + self.n_query

    @property
    def support(self) -> int:
        """Support images per episode: ``n_way * n_shot``."""
        return self.n_way * self.n_shot

    @property
    def queries(self) -> int:
        """Query images per episode: ``n_way * n_query``."""
        return self.n_way * self.n_query

    @property
    def images_per_episode(self) -> int:
        """All images of an episode: ``n_way * (n_shot + n_query)``."""
        return self.n_way * self.per_class


def _take(draws: np.ndarray, population: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` items of a Fisher-Yates shuffle of ``population`` driven by raw uint64 ``draws``.

    Distinct items, in random order; ``population`` is not modified.
    """
    pool = population.copy()
    n = len(pool)
    for i in range(k):
        j = i + int(draws[i] % np.uint64(n - i))
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:k]


class EpisodeSampler:
    """Episodes of image indices into one split, each a pure function of ``(seed, stream, index)``.

    ``labels`` holds the class of each image of the split (any integers; the classes are its distinct values).
    Every class must have at least ``n_shot + n_query`` images (a ``ValueError`` names every class that has
    fewer) and there must be at least ``n_way`` classes.
    """

    def __init__(self, labels: torch.Tensor | np.ndarray, shape: EpisodeShape, seed: int):
        if not isinstance(shape, EpisodeShape):
            raise TypeError(f"shape must be an EpisodeShape, got {type(shape).__name__}")
        array = labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
        if array.ndim != 1:
            raise ValueError(f"labels must be one class index per image (1-D), got shape {tuple(array.shape)}")
        if array.dtype.kind not in "iu":
            raise ValueError(f"labels must be integers, got dtype {array.dtype}")
        self.shape = shape
        self.seed = _non_negative_int("seed", seed, _MAX_KEY)
        self.classes, counts = np.unique(array, return_counts=True)
        short = [
            f"{c} ({n} image{'s' if n != 1 else ''})"
            for c, n in zip(self.classes.tolist(), counts.tolist())
            if n < shape.per_class
        ]
        if short:
            raise ValueError(
                f"{len(short)} of {len(self.classes)} classes have fewer than n_shot + n_query = {shape.per_class} "
                f"images: class {', class '.join(short)}"
            )
        if len(self.classes) < shape.n_way:
            raise ValueError(
                f"{shape.n_way}-way episodes need {shape.n_way} classes; the labels have {len(self.classes)}"
            )
        # The images of each class, in ascending index order (a fixed order, so that draws are reproducible).
        order = np.argsort(array, kind="stable")
        self._images = np.split(order.astype(np.int64), np.cumsum(counts)[:-1])
        self._class_positions = np.arange(len(self.classes), dtype=np.int64)
        self._targets = torch.arange(shape.n_way, dtype=torch.int64).repeat_interleave(shape.n_query)

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def episode(self, stream: int, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Episode ``index`` of ``stream``: (image indices, query targets).

        Image indices: int64, length ``n_way * (n_shot + n_query)``, the support set way-major then the queries
        way-major. Query targets: int64, length ``n_way * n_query``, the way of each query.
        """
        stream = _non_negative_int("stream", stream, _MAX_KEY)
        index = _non_negative_int("index", index, _MAX_KEY)
        shape = self.shape
        bits = np.random.PCG64(np.random.SeedSequence([self.seed, stream, index]))
        draws = bits.random_raw(shape.n_way + shape.n_way * shape.per_class)
        ways = _take(draws[: shape.n_way], self._class_positions, shape.n_way)
        per_way = [
            _take(draws[shape.n_way + w * shape.per_class :], self._images[c], shape.per_class)
            for w, c in enumerate(ways.tolist())
        ]
        support = [images[: shape.n_shot] for images in per_way]
        queries = [images[shape.n_shot :] for images in per_way]
        indices = torch.from_numpy(np.concatenate(support + queries))
        return indices, self._targets.clone()

    def episodes(self, stream: int, indices: Sequence[int] | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Episodes ``indices`` of ``stream``, stacked: image indices ``(E, N)`` and query targets ``(E, Q)``."""
        if isinstance(indices, torch.Tensor):
            indices = indices.reshape(-1).tolist()
        drawn = [self.episode(stream, index) for index in indices]
        if not drawn:
            return (
                torch.empty(0, self.shape.images_per_episode, dtype=torch.int64),
                torch.empty(0, self.shape.queries, dtype=torch.int64),
            )
        images, targets = zip(*drawn)
        return torch.stack(images), torch.stack(targets)

    def __repr__(self) -> str:
        s = self.shape
        return (
            f"EpisodeSampler({s.n_way}-way {s.n_shot}-shot {s.n_query}-query, {self.num_classes} classes, "
            f"seed={self.seed})"
        )
