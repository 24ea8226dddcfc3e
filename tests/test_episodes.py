"""The episode sampler: well-formed episodes, addressable by (seed, stream, index), split by episodes."""

import numpy as np
import pytest
import torch

from parabench.data.episodes import EpisodeSampler, EpisodeShape

SHAPE = EpisodeShape(n_way=5, n_shot=2, n_query=3)


@pytest.fixture
def labels() -> np.ndarray:
    """12 classes (ids 10, 13, ..., 43: not 0..11) of 8 to 14 images each, shuffled into one split."""
    rng = np.random.default_rng(0)
    per_class = rng.integers(8, 15, size=12)
    labels = np.repeat(10 + 3 * np.arange(12), per_class)
    return rng.permutation(labels)


def _sampler(labels: np.ndarray, seed: int = 0, shape: EpisodeShape = SHAPE) -> EpisodeSampler:
    return EpisodeSampler(labels, shape, seed)


def test_shape_properties() -> None:
    assert SHAPE.images_per_episode == 5 * (2 + 3) == 25
    assert SHAPE.queries == 15 and SHAPE.support == 10 and SHAPE.per_class == 5


@pytest.mark.parametrize("as_tensor", [False, True])
def test_episodes_are_well_formed(labels: np.ndarray, as_tensor: bool) -> None:
    sampler = _sampler(torch.from_numpy(labels) if as_tensor else labels)
    way_orders = set()
    for index in range(50):
        images, targets = sampler.episode(stream=3, index=index)
        assert images.dtype == targets.dtype == torch.int64
        assert images.shape == (SHAPE.images_per_episode,) and targets.shape == (SHAPE.queries,)
        support, query = images[: SHAPE.support].numpy(), images[SHAPE.support :].numpy()
        # distinct images; support and query disjoint
        assert len(set(images.tolist())) == len(images)
        assert not set(support.tolist()) & set(query.tolist())
        # support way-major: the n_shot images of way w are of one class, and the n_way classes are distinct
        support_classes = labels[support].reshape(SHAPE.n_way, SHAPE.n_shot)
        assert (support_classes == support_classes[:, :1]).all()
        way_classes = support_classes[:, 0]
        assert len(set(way_classes.tolist())) == SHAPE.n_way
        # queries way-major, and every query's target is the way whose class it belongs to
        assert torch.equal(targets, torch.arange(SHAPE.n_way).repeat_interleave(SHAPE.n_query))
        np.testing.assert_array_equal(labels[query], way_classes[targets.numpy()])
        way_orders.add(tuple(way_classes.tolist()))
    # the classes and their ways vary: not always the same classes, nor in sorted order
    assert len(way_orders) > 40
    assert any(list(order) != sorted(order) for order in way_orders)


def test_every_class_and_image_gets_drawn(labels: np.ndarray) -> None:
    sampler = _sampler(labels)
    images, _ = sampler.episodes(0, range(200))
    assert set(labels[images.flatten().numpy()].tolist()) == set(labels.tolist())
    assert set(images.flatten().tolist()) == set(range(len(labels)))


def test_an_episode_depends_only_on_seed_stream_and_index(labels: np.ndarray) -> None:
    a = _sampler(labels, seed=5)
    forward = [a.episode(2, i) for i in range(20)]
    torch.manual_seed(123)  # global RNG states play no part
    np.random.seed(123)
    b = _sampler(labels, seed=5)
    backward = [b.episode(2, i) for i in reversed(range(20))][::-1]
    b.episode(0, 7)  # drawing others in between changes nothing
    for (ia, ta), (ib, tb) in zip(forward, backward):
        assert torch.equal(ia, ib) and torch.equal(ta, tb)
    assert torch.equal(b.episode(2, 17)[0], forward[17][0])
    # numpy integers and 0-d tensors address the same episode
    assert torch.equal(a.episode(np.int64(2), torch.tensor(17))[0], forward[17][0])

    def distinct(episodes: list[torch.Tensor]) -> int:
        return len({tuple(e.tolist()) for e in episodes})

    assert distinct([e for e, _ in forward]) == 20  # another index: another episode
    assert distinct([a.episode(s, 4)[0] for s in range(10)]) == 10  # another stream: another episode
    assert distinct([_sampler(labels, seed=s).episode(2, 4)[0] for s in range(10)]) == 10  # another seed


def test_fixed_draws_for_a_fixed_seed() -> None:
    """The stream is NumPy's PCG64 raw output: pin one episode so that a change of sampling shows up."""
    labels = np.repeat(np.arange(4), 3)  # classes 0..3, images 3c..3c+2
    images, targets = EpisodeSampler(labels, EpisodeShape(2, 1, 1), seed=0).episode(0, 0)
    assert images.tolist() == [11, 6, 9, 7]  # way 0 = class 3 (support 11, query 9), way 1 = class 2 (6, 7)
    assert targets.tolist() == [0, 1]


def test_splitting_episode_indices_between_replicas(labels: np.ndarray) -> None:
    """Each replica sampling its part of the indices = sampling them all at once, split on dim 0."""
    sampler = _sampler(labels, seed=3)
    indices = [11, 4, 29, 0, 7, 7, 30, 2]
    images, targets = sampler.episodes(1, indices)
    assert images.shape == (8, SHAPE.images_per_episode) and targets.shape == (8, SHAPE.queries)
    for cut in (0, 3, 4, 8):
        replica_0 = _sampler(labels, seed=3).episodes(1, indices[:cut])
        replica_1 = _sampler(labels, seed=3).episodes(1, torch.tensor(indices[cut:], dtype=torch.int64))
        assert torch.equal(torch.cat([replica_0[0], replica_1[0]]), images)
        assert torch.equal(torch.cat([replica_0[1], replica_1[1]]), targets)
    for row, index in enumerate(indices):
        assert torch.equal(images[row], sampler.episode(1, index)[0])


def test_too_small_classes_are_named(labels: np.ndarray) -> None:
    short = labels.copy()
    short = short[~((short == 16) & (np.cumsum(short == 16) > 4))]  # class 16: 4 images left
    short = short[~((short == 40) & (np.cumsum(short == 40) > 1))]  # class 40: 1 image left
    named = r"2 of 12 classes .* = 5 images: class 16 \(4 images\), class 40 \(1 image\)$"
    with pytest.raises(ValueError, match=named):
        _sampler(short)
    short = short[short != 40]
    _sampler(short, shape=EpisodeShape(5, 1, 1))  # class 16 has enough for 1 shot + 1 query
    with pytest.raises(ValueError, match="5-way episodes need 5 classes"):
        _sampler(np.repeat(np.arange(4), 10))


def test_rejects_bad_inputs(labels: np.ndarray) -> None:
    with pytest.raises(ValueError, match="integers"):
        _sampler(labels.astype(np.float32))
    with pytest.raises(ValueError, match="1-D"):
        _sampler(labels[: len(labels) // 2 * 2].reshape(2, -1))
    with pytest.raises(ValueError, match="index"):
        _sampler(labels).episode(0, -1)
    with pytest.raises(TypeError, match="stream"):
        _sampler(labels).episode(1.0, 0)  # type: ignore[arg-type]
    empty_images, empty_targets = _sampler(labels).episodes(0, [])
    assert empty_images.shape == (0, SHAPE.images_per_episode) and empty_targets.shape == (0, SHAPE.queries)
