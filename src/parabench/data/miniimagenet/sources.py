"""miniImageNet's published files, with their checksum pins, and its params.yaml section."""

from typing import Literal

from parabench.data.fetch import RemoteFile
from parabench.data.miniimagenet.content_checks import pickle_problem, zip_problem
from parabench.data.source import DataSource

DATASET = "miniimagenet"
MIRROR_FOLDER = "miniimagenet"
SPLITS = ("train", "val", "test")
# "images": the seed's images.zip (84x84-and-larger ImageNet crops named <wnid><8 digits>.jpg; the class is the
# 9-character wnid prefix) with the split files train.csv, val.csv, test.csv (filename,label). "pickles":
# learn2learn's mini-imagenet-cache-{train,validation,test}.pkl, each a dict with image_data (N x 84 x 84 x 3
# uint8) and class_dict ({wnid: [row indices]}). Both prepare to the same arrays.
Layout = Literal["images", "pickles"]
IMAGE_SIZE = (84, 84)
IMAGES_DIR = "images"

# The other modules read SPLIT_CSVS, IMAGES_ZIP and PICKLES as attributes of this module when they run, so a
# test can point them at a local server in one place.
SPLIT_CSV_URL = "https://raw.githubusercontent.com/twitter/meta-learning-lstm/master/data/miniImagenet/"
# Ravi & Larochelle publish the split files in their repository; their md5 (as in the usual loaders) are
# train 9525e1538f67719f18f1936bf8d0782d, val ce315ce99b41fbf84fa6acd69315d918, test 5b89df877c6cbe5d291e43118a2a9591.
# The sha256 pinned here were computed from byte-identical copies whose md5 match those.
SPLIT_CSVS = {
    "train": RemoteFile(
        "train.csv", (SPLIT_CSV_URL + "train.csv",), "498519cd8e49ce97ed26a4a3638966698ae41ab35e9c68538319fc9b46ba7d2f"
    ),
    "val": RemoteFile(
        "val.csv", (SPLIT_CSV_URL + "val.csv",), "5658a59921ca027ee76af92949869c5d6f41d77592ff3b18db325a9d10c893b9"
    ),
    "test": RemoteFile(
        "test.csv", (SPLIT_CSV_URL + "test.csv",), "2b7cfa78342995761a572a8158e539bc4e0a80f9bbd7d00c1e17a460fbbb93fa"
    ),
}
# images.zip: the 60,000 images, shared by Ravi & Larochelle on Google Drive (file id 0B3Irx3uQNoBMQ1FlNXJsZUdYWEE).
# No checksum is published for it, and it could not be downloaded where this was written to compute one, so it
# is unpinned: the first copy is trusted and its sha256 recorded in SHA256SUMS (trust on first use, see fetch.py).
IMAGES_ZIP = RemoteFile(
    "images.zip",
    ("https://drive.usercontent.google.com/download?id=0B3Irx3uQNoBMQ1FlNXJsZUdYWEE&export=download&confirm=t",),
    sha256=None,
    content_check=zip_problem,
)
# learn2learn's pickles (its mini_imagenet.py): Zenodo first, its Dropbox links as fallback. No checksum is
# published for them: unpinned, trusted on first use like images.zip, and only ever unpickled restricted.
PICKLE_SPLIT_NAMES = {"train": "train", "val": "validation", "test": "test"}
DROPBOX_URLS = {
    "train": "https://www.dropbox.com/s/9g8c6w345s2ek03/mini-imagenet-cache-train.pkl?dl=1",
    "val": "https://www.dropbox.com/s/ip1b7se3gij3r1b/mini-imagenet-cache-validation.pkl?dl=1",
    "test": "https://www.dropbox.com/s/ye9jeb5tyz0x01b/mini-imagenet-cache-test.pkl?dl=1",
}
PICKLES = {
    split: RemoteFile(
        f"mini-imagenet-cache-{name}.pkl",
        (f"https://zenodo.org/record/7978538/files/mini-imagenet-cache-{name}.pkl", DROPBOX_URLS[split]),
        sha256=None,
        content_check=pickle_problem,
    )
    for split, name in PICKLE_SPLIT_NAMES.items()
}


class MiniImagenetSource(DataSource):
    """params.yaml `data.miniimagenet`: where miniImageNet comes from, and which public layout to download.

    source: "download" (the official files; $PARABENCH_DATA_MIRROR/miniimagenet first) or a local folder, whose
    layout is detected (layout only breaks the tie when it holds both).
    layout: "images" (images.zip and the split CSVs) or "pickles" (learn2learn's 84x84 pickles).
    """

    layout: Layout
