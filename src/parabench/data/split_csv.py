"""Read miniImageNet's split CSVs (filename,label; the images live in one folder), collecting every problem."""

import csv
from collections import Counter
from pathlib import Path

IMAGES_DIR = "images"
CSV_HEADER = ["filename", "label"]
WNID_LENGTH = 9


def read_split_csv(path: Path, problems: list[str]) -> list[tuple[str, str]]:
    """The (filename, label) rows of a split CSV; every problem found is added to `problems`."""
    if not path.is_file():
        problems.append(f"{path} is missing; each split needs its CSV with the header filename,label")
        return []
    try:
        with path.open(newline="", encoding="utf-8-sig") as stream:
            lines = list(csv.reader(stream))
    except (UnicodeDecodeError, csv.Error) as error:
        problems.append(f"{path} is not a readable CSV file ({error})")
        return []
    if not lines or lines[0] != CSV_HEADER:
        header = ",".join(lines[0]) if lines else "empty"
        problems.append(f"{path} starts with {header!r}; its header must be filename,label")
        return []
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, fields in enumerate(lines[1:], start=2):
        problem = _row_problem(fields, seen)
        if problem:
            problems.append(f"{path} line {number}: {problem}")
        else:
            rows.append((fields[0], fields[1]))
            seen.add(fields[0])
    if not rows and len(lines) == 1:
        problems.append(f"{path} lists no images")
    return rows


def files_in_two_splits(rows: dict[str, list[tuple[str, str]]]) -> list[str]:
    """A problem for each image listed by more than one split CSV."""
    counts = Counter(name for split_rows in rows.values() for name, _ in split_rows)
    return [f"{name} is listed by more than one split CSV" for name, count in sorted(counts.items()) if count > 1]


def _row_problem(fields: list[str], seen: set[str]) -> str:
    """Why a CSV row is not a usable (filename, label) pair, or ""."""
    if len(fields) != 2:
        return f"{','.join(fields)!r} is not filename,label"
    filename, label = fields
    if not filename or filename in (".", "..") or "/" in filename or "\\" in filename:
        return f"{filename!r} is not a plain file name (the images live directly in {IMAGES_DIR}/)"
    if label != filename[:WNID_LENGTH]:
        return f"label {label!r} does not match the wnid {filename[:WNID_LENGTH]!r} that starts {filename}"
    if filename in seen:
        return f"{filename} is listed twice"
    return ""
