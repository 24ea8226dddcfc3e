"""decode_images: parallel Pillow decoding to uint8 N x 3 x H x W, in order, with undecodable files reported."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from parabench.data.images import decode_images


def _image(path: Path, size: tuple[int, int], colour: tuple[int, int, int], mode: str = "RGB") -> Path:
    """A solid-colour image of size (width, height), saved in the format its suffix names."""
    Image.new("RGB", size, colour).convert(mode).save(path)
    return path


def test_images_come_back_in_order_as_uint8_chw(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (10, 20, 30), (200, 100, 50)]
    paths = [_image(tmp_path / f"{index}.png", (12, 10), colour) for index, colour in enumerate(colours)]
    images, problems = decode_images(paths, size=(10, 12), workers=2)
    assert problems == []
    assert images.dtype == np.uint8 and images.shape == (5, 3, 10, 12)
    for image, colour in zip(images, colours, strict=True):
        assert image.reshape(3, -1).T.tolist() == [list(colour)] * 120
    assert capfd.readouterr().err == "", "no progress bar where the output is not a terminal (a CI log)"


def test_other_sizes_and_modes_are_resized_and_made_rgb(tmp_path: Path) -> None:
    paths = [
        _image(tmp_path / "big.jpg", (400, 300), (120, 60, 30)),
        _image(tmp_path / "grey.png", (84, 84), (90, 90, 90), mode="L"),
        _image(tmp_path / "alpha.png", (30, 50), (1, 2, 3), mode="RGBA"),
        _image(tmp_path / "palette.gif", (84, 84), (255, 0, 0), mode="P"),
    ]
    images, problems = decode_images(paths, workers=1)
    assert problems == [] and images.shape == (4, 3, 84, 84)
    assert np.abs(images[0].astype(int) - np.array([120, 60, 30])[:, None, None]).max() <= 3  # JPEG is lossy
    assert (images[1] == 90).all() and (images[2] == np.array([1, 2, 3])[:, None, None]).all()
    assert (images[3] == np.array([255, 0, 0])[:, None, None]).all()


def test_a_file_that_does_not_decode_is_reported_not_raised(tmp_path: Path) -> None:
    good = _image(tmp_path / "good.png", (84, 84), (7, 8, 9))
    text = tmp_path / "text.jpg"
    text.write_bytes(b"not an image")
    cut = _image(tmp_path / "cut.jpg", (200, 200), (50, 50, 50))
    cut.write_bytes(cut.read_bytes()[:300])
    images, problems = decode_images([text, good, cut], workers=2)
    assert len(problems) == 2
    assert problems[0].startswith(f"{text} does not decode") and problems[1].startswith(f"{cut} does not decode")
    assert (images[1] == np.array([7, 8, 9])[:, None, None]).all()
    assert not images[0].any() and not images[2].any()


def test_decoding_is_deterministic_across_worker_counts(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    paths = []
    for index in range(9):
        path = tmp_path / f"{index}.jpg"
        Image.fromarray(rng.integers(0, 256, size=(90 + index, 130, 3), dtype=np.uint8)).save(path, quality=90)
        paths.append(path)
    first, _ = decode_images(paths, workers=1)
    second, _ = decode_images(paths, workers=2)
    assert first.tobytes() == second.tobytes()


def test_no_paths_give_an_empty_array() -> None:
    images, problems = decode_images([], size=(84, 84))
    assert images.shape == (0, 3, 84, 84) and problems == []


@pytest.mark.parametrize("workers", [1, 3])
def test_more_files_than_a_chunk_keep_their_order(tmp_path: Path, workers: int) -> None:
    paths = [_image(tmp_path / f"{index}.png", (4, 4), (index, 0, 0)) for index in range(40)]
    images, problems = decode_images(paths, size=(4, 4), workers=workers)
    assert problems == [] and images[:, 0, 0, 0].tolist() == list(range(40))
