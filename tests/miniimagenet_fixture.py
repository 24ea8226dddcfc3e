"""A tiny miniImageNet in layout (a), images/ and the three split CSVs, for tests that train on it."""

import csv
from pathlib import Path

import numpy as np
from PIL import Image

CLASSES = {"train": 4, "val": 3, "test": 3}
SPLIT_DIGIT = {"train": 1, "val": 2, "test": 3}


def write_image_folder(folder: Path, images_per_class: int = 4, seed: int = 0) -> Path:
    """Noisy 84x84 JPEGs whose class shows in their mean colour, `images_per_class` per class; returns `folder`."""
    generator = np.random.default_rng(seed)
    (folder / "images").mkdir(parents=True)
    for split, count in CLASSES.items():
        rows = []
        for number in range(count):
            wnid = f"n0{SPLIT_DIGIT[split]}{number:06d}"
            colour = generator.integers(0, 256, 3)
            for image in range(images_per_class):
                pixels = np.clip(colour + generator.normal(0, 40, (84, 84, 3)), 0, 255).astype(np.uint8)
                name = f"{wnid}{image:08d}.jpg"
                Image.fromarray(pixels).save(folder / "images" / name, quality=90)
                rows.append((name, wnid))
        with (folder / f"{split}.csv").open("w", newline="") as stream:
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerows([("filename", "label"), *rows])
    return folder
