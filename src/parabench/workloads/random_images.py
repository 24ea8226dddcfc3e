"""Seed 001's synthetic data: random normal images and random classes, drawn from the run's seed.

This file is what a synthetic workload's stages depend on (params.yaml `inputs`) when they read no dataset.
"""

import torch

from parabench.workloads.timing_images import TimingImages


def random_images(units: int, shape: tuple[int, ...], num_classes: int, seed: int) -> TimingImages:
    """`units` images of `shape` from N(0, 1) and a class in [0, num_classes) for each, from a generator seeded
    with `seed`."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn((units, *shape), generator=generator)
    classes = torch.randint(0, num_classes, (units,), generator=generator)
    size = "x".join(str(length) for length in shape)
    return TimingImages(
        images,
        classes,
        num_classes,
        f"synthetic: {units:,} random normal {size} images with random classes among {num_classes:,}; "
        f"drawn from seed {seed}, no dataset",
    )
