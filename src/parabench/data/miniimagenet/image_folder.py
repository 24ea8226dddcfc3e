"""Prepare the images layout: check the split CSVs against images/, then decode every image once."""

from pathlib import Path

from parabench.data.images import decode_images
from parabench.data.miniimagenet import sources
from parabench.data.miniimagenet.prepared_split import PreparedSplit, split_by_class
from parabench.data.miniimagenet.problems import classes_in_two_splits, problem_report
from parabench.data.miniimagenet.sources import IMAGE_SIZE, IMAGES_DIR, SPLITS
from parabench.data.miniimagenet.split_csv import files_in_two_splits, read_split_csv
from parabench.errors import DataError


def read_image_folder(raw_dir: Path) -> dict[str, PreparedSplit]:
    """Read the split CSVs, check them and the images, and decode every image once (in parallel)."""
    problems: list[str] = []
    rows = {split: read_split_csv(raw_dir / sources.SPLIT_CSVS[split].name, problems) for split in SPLITS}
    problems += classes_in_two_splits({split: {label for _, label in rows[split]} for split in SPLITS})
    problems += files_in_two_splits(rows)
    images_dir = raw_dir / IMAGES_DIR
    present: dict[str, list[tuple[str, str]]] = {}
    for split, split_rows in rows.items():
        present[split] = [row for row in split_rows if (images_dir / row[0]).is_file()]
        problems += [
            f"{images_dir / name} is missing (listed in {split}.csv)"
            for name, _ in sorted(set(split_rows) - set(present[split]))
        ]
    ordered = {split: sorted(split_rows, key=lambda row: (row[1], row[0])) for split, split_rows in present.items()}
    paths = [images_dir / name for split in SPLITS for name, _ in ordered[split]]
    images, decode_problems = decode_images(paths, IMAGE_SIZE)
    problems += decode_problems
    if problems:
        raise DataError(problem_report(raw_dir, problems))
    splits = {}
    start = 0
    for split in SPLITS:
        stop = start + len(ordered[split])
        splits[split] = split_by_class(images[start:stop], [label for _, label in ordered[split]])
        start = stop
    return splits
