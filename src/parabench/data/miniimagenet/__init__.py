"""miniImageNet (Ravi & Larochelle's split): get it in either public layout, then decode it once into arrays."""

from parabench.data.miniimagenet.downloading import download
from parabench.data.miniimagenet.prepared import PreparedMiniImagenet, load_prepared
from parabench.data.miniimagenet.prepared_split import PreparedSplit
from parabench.data.miniimagenet.preparing import prepare
from parabench.data.miniimagenet.sources import IMAGE_SIZE, MIRROR_FOLDER, PICKLES, SPLITS, MiniImagenetSource

__all__ = [
    "IMAGE_SIZE",
    "MIRROR_FOLDER",
    "PICKLES",
    "SPLITS",
    "MiniImagenetSource",
    "PreparedMiniImagenet",
    "PreparedSplit",
    "download",
    "load_prepared",
    "prepare",
]
