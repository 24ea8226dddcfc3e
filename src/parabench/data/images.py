"""Decode image files in parallel worker processes into one uint8 array; a file that will not decode is reported.

Each image is converted to RGB and, when it is not already of the asked size, resized with Pillow's bilinear
filter (antialiased when shrinking): cheap, and with JPEG draft mode (the decoder scales by 1/2, 1/4 or 1/8
while staying at least the asked size) large photos decode fast. MAML's miniImageNet script used Lanczos, so
pixel values differ slightly from that preprocessing; the same files and Pillow build always give the same bytes.
Alpha is dropped, not composited, and EXIF orientation is ignored, as the usual miniImageNet loaders do.
"""

import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from parabench.runtime.cpu import usable_cores

MAX_CHUNK_IMAGES = 256
CHUNKS_PER_WORKER = 4
DECODE_ERRORS = (OSError, SyntaxError, ValueError, Image.DecompressionBombError)


def decode_images(
    paths: Sequence[Path], size: tuple[int, int] = (84, 84), workers: int | None = None
) -> tuple[np.ndarray, list[str]]:
    """Decode the files, in order, into a uint8 N x 3 x height x width array (size is (height, width)).

    Returns the array and one line per file that did not decode, naming it and why; its slot is left zero.
    workers: processes to decode with (default: the usable cores); files go to them in chunks.
    """
    images = np.zeros((len(paths), 3, *size), dtype=np.uint8)
    if not paths:
        return images, []
    workers = workers or usable_cores()
    chunk = max(1, min(MAX_CHUNK_IMAGES, math.ceil(len(paths) / (workers * CHUNKS_PER_WORKER))))
    starts = range(0, len(paths), chunk)
    problems: dict[int, str] = {}
    with (
        ProcessPoolExecutor(max_workers=min(workers, len(starts))) as pool,
        tqdm(total=len(paths), unit="img", desc="decoding images", leave=False, disable=None) as progress,
    ):
        futures = {
            pool.submit(_decode_chunk, [str(path) for path in paths[start : start + chunk]], size): start
            for start in starts
        }
        for future in as_completed(futures):
            start = futures[future]
            decoded, chunk_problems = future.result()
            images[start : start + len(decoded)] = decoded
            problems.update((start + offset, problem) for offset, problem in chunk_problems)
            progress.update(len(decoded))
    return images, [problems[index] for index in sorted(problems)]


def _decode_chunk(paths: list[str], size: tuple[int, int]) -> tuple[np.ndarray, list[tuple[int, str]]]:
    """Decode a chunk in a worker: the images, and (position in the chunk, problem) for each failed file."""
    images = np.zeros((len(paths), 3, *size), dtype=np.uint8)
    problems = []
    for offset, path in enumerate(paths):
        try:
            images[offset] = _decode(path, size)
        except DECODE_ERRORS as error:
            problems.append((offset, f"{path} does not decode as an image: {error}"))
    return images, problems


def _decode(path: str, size: tuple[int, int]) -> np.ndarray:
    """One file as a 3 x height x width uint8 RGB array."""
    height, width = size
    with Image.open(path) as image:
        image.draft("RGB", (width, height))  # JPEG decodes at a reduced scale; other formats ignore it
        rgb = image.convert("RGB")
    if rgb.size != (width, height):
        rgb = rgb.resize((width, height), Image.Resampling.BILINEAR)
    return np.asarray(rgb).transpose(2, 0, 1)
