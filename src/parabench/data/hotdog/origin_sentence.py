"""The data_origin sentence results quote: d2l's hotdog, or another folder in its layout, and where it came from."""

from pathlib import Path

from parabench.data.class_folders import SPLITS
from parabench.data.hotdog.sources import OFFICIAL_COUNTS
from parabench.data.origin import describe_origin, read_origin


def data_origin(raw_dir: Path, class_counts: dict[str, dict[str, int]]) -> str:
    """One sentence, `<what the data is (details)>; <where it came from>`: d2l's hotdog only when its sha1-verified
    official archive gave d2l's counts; an image folder with d2l's counts, or another folder in its layout,
    otherwise. class_counts: the number of images of each class (in sorted order) per split."""
    origin = read_origin(raw_dir)
    where = describe_origin(origin, raw_dir, checksum="sha1")
    sizes = " + ".join(f"{sum(class_counts[split].values()):,} {split}" for split in SPLITS)
    classes = list(class_counts[SPLITS[0]])
    class_text = f"{len(classes)} class{'es' if len(classes) != 1 else ''}"
    if class_counts == OFFICIAL_COUNTS:
        if origin is not None and origin.kind == "official" and origin.verified:
            return f"d2l's hotdog ({sizes} images, {class_text}); {where}"
        return (
            f"an image folder with d2l's hotdog counts ({sizes} images, {class_text}), "
            f"not verified to be d2l's hotdog.zip; {where}"
        )
    official = " + ".join(f"{sum(OFFICIAL_COUNTS[split].values()):,}" for split in SPLITS)
    return (
        f"a hotdog-layout folder: {sizes} images, {class_text} ({', '.join(classes)}), "
        f"NOT d2l's hotdog.zip ({official} images); {where}"
    )
