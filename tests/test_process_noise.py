"""benchmarks/process_noise.py's arithmetic: the per-process part is the processes' spread beyond their intervals."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from process_noise import per_process_part


def test_processes_that_agree_within_their_intervals_have_no_per_process_part():
    per_step, per_process = per_process_part([(1.0, 0.98, 1.02), (1.005, 0.985, 1.025), (0.995, 0.975, 1.015)])
    assert per_step == pytest.approx(math.log(1.02 / 0.98) / 2, rel=0.01) and per_process == 0.0


def test_processes_apart_beyond_their_intervals_have_a_per_process_part_of_about_their_spread():
    """The reference at 1.0 and three others at 0.95, 1.0 and 1.05, each known within 0.1%."""
    ratios = [(0.95, 0.949, 0.951), (1.0, 0.999, 1.001), (1.05, 1.049, 1.051)]
    _, per_process = per_process_part(ratios)
    levels = [0.0, *(math.log(point) for point, _, _ in ratios)]
    mean = sum(levels) / 4
    assert per_process == pytest.approx(math.sqrt(sum((level - mean) ** 2 for level in levels) / 3), rel=0.01)


def test_every_other_process_apart_from_the_reference_shows_as_a_per_process_part():
    """Three controls alike, 5% from the reference: the reference is the process apart, and that counts too."""
    _, per_process = per_process_part([(1.05, 1.049, 1.051)] * 3)
    assert per_process > 0.02
