"""d2l's hotdog dataset: its published archive with its checksum pin, and the sizes of the official set."""

from parabench.data.fetch import RemoteFile

DATASET = "hotdog"
MIRROR_FOLDER = "hotdog"
# Photos are squashed to this size (height, width) at prepare; see preparing.py for why.
IMAGE_SIZE = (256, 256)

# The other modules read HOTDOG_ZIP as an attribute of this module when they run, so a test can point it at a
# local server in one place. Inside: hotdog/{train,test}/{hotdog,not-hotdog}/<n>.png. d2l publishes only a sha1:
# DATA_HUB['hotdog'] = (DATA_URL + 'hotdog.zip', 'fba480ffa8aa7e0febbb511d181409f899b9baa5') in d2l's
# fine-tuning chapter, DATA_URL being its data host below; the MXNet gluon copy is the same file (pinned by the
# same sha1 in the book's MXNet edition).
HOTDOG_ZIP = RemoteFile(
    "hotdog.zip",
    (
        "http://d2l-data.s3-accelerate.amazonaws.com/hotdog.zip",
        "https://apache-mxnet.s3-accelerate.amazonaws.com/gluon/dataset/hotdog.zip",
    ),
    sha256=None,
    sha1="fba480ffa8aa7e0febbb511d181409f899b9baa5",
)
# d2l's hotdog.zip: 1,000 + 1,000 training and 400 + 400 test images of the two classes.
OFFICIAL_COUNTS = {
    "train": {"hotdog": 1000, "not-hotdog": 1000},
    "test": {"hotdog": 400, "not-hotdog": 400},
}
