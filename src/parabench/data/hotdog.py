"""d2l's hotdog (hot dog or not): d2l's hotdog.zip, or a folder in its layout, decoded once into 256 x 256 arrays.

Every photo is squashed to 256 x 256 (its aspect ratio is not kept; Pillow's bilinear filter, see images.py).
That is exactly the first step of seed 002's test transform, Resize([256, 256]) then CenterCrop(224), so the
evaluation needs only the crop; and training's RandomResizedCrop(224) still sees the whole photo (squashed),
where a centre crop at prepare would have cut its sides off for good. d2l's photos vary in size and shape; the
crop's scale and aspect-ratio draws are taken on the squashed photo rather than the original, a small difference
from transforming the original files on the fly.
"""

from dataclasses import dataclass

from parabench.data.class_folder_dataset import ClassFolderDataset
from parabench.data.dataset import Phrases
from parabench.data.fetch import RemoteFile
from parabench.data.provenance import Provenance

# Inside: hotdog/{train,test}/{hotdog,not-hotdog}/<n>.png. d2l publishes only a sha1: DATA_HUB['hotdog'] =
# (DATA_URL + 'hotdog.zip', 'fba480ffa8aa7e0febbb511d181409f899b9baa5') in d2l's fine-tuning chapter, DATA_URL
# being its data host below; the MXNet gluon copy is the same file (pinned by the same sha1 in the book's MXNet
# edition).
HOTDOG_ZIP = RemoteFile(
    "hotdog.zip",
    (
        "http://d2l-data.s3-accelerate.amazonaws.com/hotdog.zip",
        "https://apache-mxnet.s3-accelerate.amazonaws.com/gluon/dataset/hotdog.zip",
    ),
    sha256=None,
    sha1="fba480ffa8aa7e0febbb511d181409f899b9baa5",
)


@dataclass(frozen=True, kw_only=True)
class Hotdog(ClassFolderDataset):
    """hotdog's class folders, worded as d2l's hotdog only when its sha1-verified archive gave d2l's counts."""

    def describe(self, provenance: Provenance) -> Phrases:
        """d2l's hotdog; an image folder with d2l's counts; or another folder in its layout, with its classes."""
        sizes = " + ".join(f"{count:,} {split}" for split, count in provenance.counts.items())
        classes = list(provenance.class_counts[self.splits[0]])
        class_text = f"{len(classes)} class{'es' if len(classes) != 1 else ''}"
        if provenance.complete and provenance.kind == "official" and provenance.verified:
            return (("d2l's hotdog", f"{sizes} images, {class_text}"),)
        if provenance.complete:
            return (
                ("an image folder with d2l's hotdog counts", f"{sizes} images, {class_text}"),
                (", not verified to be d2l's hotdog.zip", ""),
            )
        official = " + ".join(f"{count:,}" for count in provenance.official_counts.values())
        return (
            (f"a hotdog-layout folder: {sizes} images, {class_text}", ", ".join(classes)),
            (", NOT d2l's hotdog.zip", f"{official} images"),
        )

    def origin_tag(self, provenance: Provenance) -> str:
        """As `describe` words it: d2l's hotdog; a folder with d2l's counts, unverified; or another folder in its layout
        (never a sample of it: other photos), with its image count."""
        if provenance.complete and provenance.kind == "official" and provenance.verified:
            return "d2l's hotdog"
        if provenance.complete:
            return "folder with d2l's hotdog counts, unverified"
        return f"hotdog-layout folder, {sum(provenance.counts.values()):,} images, NOT d2l's"


HOTDOG = Hotdog(
    name="hotdog",
    title="hotdog",
    splits=("train", "test"),
    mirror_folder="hotdog",
    image_shape=(3, 256, 256),
    official_classes={"train": 2, "test": 2},  # d2l's hotdog.zip: 1,000 + 1,000 training, 400 + 400 test photos
    official_images_per_class={"train": 1000, "test": 400},
    checksum_algorithm="sha1",
    resize=(
        "each image squashed to 256 x 256 (aspect ratio not kept) with Pillow's bilinear filter, antialiased when "
        "shrinking, as seed 002's Resize([256, 256])"
    ),
    local_detail="a bring-your-own folder copied without checksum verification, not d2l's hotdog.zip",
    stand_in_kind="local",
    stand_in_detail=(
        "the mirror's stand-in folder in d2l's layout, not d2l's hotdog.zip, copied without checksum verification"
    ),
    archive=HOTDOG_ZIP,
)
