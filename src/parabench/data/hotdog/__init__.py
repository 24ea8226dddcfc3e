"""d2l's hotdog (hot dog or not): get hotdog.zip or a folder in its layout, then decode it once into arrays."""

from parabench.data.hotdog.downloading import download
from parabench.data.hotdog.prepared import PreparedHotdog, load_prepared
from parabench.data.hotdog.preparing import prepare
from parabench.data.hotdog.sources import HOTDOG_ZIP, IMAGE_SIZE, MIRROR_FOLDER

__all__ = [
    "HOTDOG_ZIP",
    "IMAGE_SIZE",
    "MIRROR_FOLDER",
    "PreparedHotdog",
    "download",
    "load_prepared",
    "prepare",
]
