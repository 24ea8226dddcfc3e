"""ImageNet-style views of uint8 images with torchvision's transforms.v2: seeded training crops, centred test crops.

Both work on tensors already on the training device, so no file is decoded during training. A training view
draws its crop and flip from the unit's own seed (Batch.unit_seeds), so a sample is augmented alike under any
strategy. The test view scales like seed 002's Resize([256, 256]) + CenterCrop(224) at any crop size.
"""

import torch
from torch import Tensor

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # torchvision's ImageNet statistics, as the seeds normalise
IMAGENET_STD = (0.229, 0.224, 0.225)
RESIZE_PER_CROP = 256 / 224  # seed 002's test view: resize to 256, keep the central 224


def normalized(images: Tensor) -> Tensor:
    """uint8 images (..., 3, H, W) to floats normalised with ImageNet's mean and deviation."""
    from torchvision.transforms import v2  # on use: its import costs 1.2 s (torch._dynamo)

    floats: Tensor = v2.functional.normalize(
        v2.functional.to_dtype(images, torch.float32, scale=True), list(IMAGENET_MEAN), list(IMAGENET_STD)
    )
    return floats


def train_views(images: Tensor, unit_seeds: Tensor, size: int, min_scale: float = 0.08) -> Tensor:
    """RandomResizedCrop(size, scale=(min_scale, 1)) and a random horizontal flip of each uint8 image, seeded by its
    own unit seed, then normalised: (N, 3, size, size) floats. torchvision's default `min_scale` 0.08 keeps as little
    as 8% of a photo: hard on small or upscaled photos, whose detail is gone at that zoom."""
    from torchvision.transforms import v2  # on use: its import costs 1.2 s (torch._dynamo)

    augment = v2.Compose(
        [v2.RandomResizedCrop(size, scale=(min_scale, 1.0), antialias=True), v2.RandomHorizontalFlip()]
    )
    views = []
    with torch.random.fork_rng(devices=[]):  # transforms.v2 draws from the CPU's default generator
        for image, seed in zip(images, unit_seeds.tolist(), strict=True):
            torch.default_generator.manual_seed(seed)
            views.append(augment(image))
    return normalized(torch.stack(views))


def eval_views(images: Tensor, size: int) -> Tensor:
    """Resize to size * 256 / 224 and keep the central size x size, then normalise: the same view every time."""
    from torchvision.transforms import v2  # on use: its import costs 1.2 s (torch._dynamo)

    resized = v2.functional.resize(images, [round(size * RESIZE_PER_CROP)] * 2, antialias=True)
    return normalized(v2.functional.center_crop(resized, [size, size]))
