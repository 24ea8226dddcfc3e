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
    ratios = [(0.95, 0.949, 0.951), (1.0, 0.999, 1.001), (1.05, 1.049, 1.051)]
    _, per_process = per_process_part(ratios)
    spread = math.sqrt(sum(math.log(point) ** 2 for point, _, _ in ratios) / 2)
    assert per_process == pytest.approx(spread, rel=0.01)
