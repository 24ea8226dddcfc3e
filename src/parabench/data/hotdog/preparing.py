"""The prepare stage: decode the raw class folders once into 256 x 256 arrays and meta.json, all at once.

Every photo is squashed to 256 x 256 (its aspect ratio is not kept; Pillow's bilinear filter, see images.py).
That is exactly the first step of seed 002's test transform, Resize([256, 256]) then CenterCrop(224), so the
evaluation needs only the crop; and training's RandomResizedCrop(224) still sees the whole photo (squashed),
where a centre crop at prepare would have cut its sides off for good. One fixed size stacks every photo into one
uint8 array. d2l's photos vary in size and shape; the crop's scale and aspect-ratio draws are taken on the
squashed photo rather than the original, a small difference from transforming the original files on the fly.
"""

import logging
from pathlib import Path

import numpy as np

from parabench.data.class_folders import SPLITS, scan_class_folders
from parabench.data.hotdog.origin_sentence import data_origin
from parabench.data.hotdog.problems import problem_report
from parabench.data.hotdog.sources import DATASET, IMAGE_SIZE
from parabench.data.images import decode_images
from parabench.errors import DataError
from parabench.io import staged_folder, write_json

RESIZE = (
    "each image squashed to 256 x 256 (aspect ratio not kept) with Pillow's bilinear filter, antialiased when "
    "shrinking, as seed 002's Resize([256, 256])"
)
PREPARE_FIX = (
    "repair the source folder (params.yaml data.hotdog.source) or set source: download, then run "
    "`dvc repro download@hotdog prepare@hotdog`."
)

logger = logging.getLogger("parabench.data")


def prepare(raw_dir: Path, out_dir: Path) -> None:
    """Check and decode the raw folder into {train,test}_images.npy (uint8 N x 3 x 256 x 256), {train,test}_labels.npy
    (int64, the index of the class in the sorted class list) and meta.json; every problem in one error, and then
    nothing is written."""
    scanned = scan_class_folders(raw_dir)
    images, undecodable = decode_images(scanned.paths(), IMAGE_SIZE)
    problems = [*scanned.problems, *undecodable]
    if problems:
        raise DataError(problem_report(raw_dir, problems, PREPARE_FIX))
    class_counts = {split: {name: len(paths) for name, paths in scanned.files[split].items()} for split in SPLITS}
    counts = {split: sum(class_counts[split].values()) for split in SPLITS}
    meta = {
        "dataset": DATASET,
        "image_size": list(IMAGE_SIZE),
        "resize": RESIZE,
        "classes": list(scanned.classes),
        "counts": counts,
        "class_counts": class_counts,
        "data_origin": data_origin(raw_dir, class_counts),
    }
    with staged_folder(out_dir) as staging:
        start = 0
        for split in SPLITS:
            np.save(staging / f"{split}_images.npy", images[start : start + counts[split]], allow_pickle=False)
            np.save(staging / f"{split}_labels.npy", np.array(scanned.labels(split), np.int64), allow_pickle=False)
            start += counts[split]
        write_json(staging / "meta.json", meta)
    logger.info("prepared hotdog: %s", meta["data_origin"])
