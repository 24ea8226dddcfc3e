"""Every training and timing process keeps freed memory for its next step: a large tensor allocated again costs no
page faults (glibc's default maps and unmaps it each time)."""

import subprocess
import sys

import pytest

PROBE = """
import resource, sys
import numpy as np
from parabench.runtime.memory import keep_freed_memory
if sys.argv[1] == "kept":
    keep_freed_memory()
np.ones(10 << 20, dtype=np.float32)  # 40 MB, allocated and freed once before counting
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    np.ones(10 << 20, dtype=np.float32)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 10)
"""


def faults_per_allocation(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_large_allocation_made_again_faults_no_page_in():
    assert faults_per_allocation("default") > 100, "glibc maps a 40 MB allocation afresh each time by default"
    assert faults_per_allocation("kept") < 10
