"""A tiny image folder in d2l's hotdog layout, train/<class>/ and test/<class>/, for tests that train on it."""

from pathlib import Path

import numpy as np
from PIL import Image

CLASSES = ("hotdog", "not-hotdog")
COUNTS = {"train": 12, "test": 4}  # images per class


def write_class_folder(folder: Path, seed: int = 0) -> Path:
    """Noisy 48x40 PNGs whose class shows in their mean colour; returns `folder`."""
    generator = np.random.default_rng(seed)
    colours = {name: generator.integers(0, 256, 3) for name in CLASSES}
    for split, count in COUNTS.items():
        for name in CLASSES:
            (folder / split / name).mkdir(parents=True)
            for number in range(count):
                pixels = np.clip(colours[name] + generator.normal(0, 40, (40, 48, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / split / name / f"{number}.png")
    return folder
