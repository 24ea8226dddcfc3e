"""Real pixels for a synthetic workload: a seeded choice of a prepared dataset's training images, as model inputs.

The same timing can then be taken on real images instead of random normal ones: grey images become three equal
channels, every image is resized to the workload's size (antialiased) and normalised with ImageNet's statistics.
The classes stay random (drawn from the seed), as for random images: the data only makes the model work.
"""

import math
from pathlib import Path

import torch

from parabench.data.provenance import origin_source
from parabench.data.registry import DATASETS
from parabench.errors import DataError
from parabench.workloads.image_views import normalized
from parabench.workloads.timing_images import TimingImages


def real_pixel_images(prepared: Path, units: int, image_size: int, num_classes: int, seed: int) -> TimingImages:
    """`units` training images of the dataset prepared in `prepared` (data/prepared/<dataset>), in an order drawn
    from `seed` (each image once before any repeats), as 3 x image_size x image_size inputs with random classes."""
    from torchvision.transforms import v2  # on use: its import costs 1.2 s (torch._dynamo)

    dataset = DATASETS[prepared.name]  # params.yaml `inputs` names only prepared datasets' folders (the schema checks)
    found = dataset.load_prepared(prepared)
    training_images = found.splits["train"].images
    if len(training_images) == 0:
        raise DataError(f"{prepared} holds no training image; run `dvc repro prepare@{dataset.name}` again.")
    generator = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(training_images), generator=generator)
    chosen = order.repeat(math.ceil(units / len(order)))[:units]
    pixels = torch.from_numpy(training_images[chosen.numpy()])
    if pixels.shape[1] == 1:
        pixels = pixels.expand(-1, 3, -1, -1)
    images = normalized(v2.functional.resize(pixels, [image_size, image_size], antialias=True))
    classes = torch.randint(0, num_classes, (units,), generator=generator)
    repeats = f", each used up to {math.ceil(units / len(order))} times" if units > len(order) else ""
    summary = dataset.origin_summary(found.provenance)
    origin = (
        f"real pixels: {units:,} training images of {summary}, resized to 3x{image_size}x{image_size}, with "
        f"random classes among {num_classes:,} (images and classes chosen by seed {seed}{repeats}); "
        f"{origin_source(found.provenance)}"
    )
    return TimingImages(images, classes, num_classes, origin, provenance_record=found.provenance)
