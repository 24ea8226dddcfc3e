"""A failed worker is named (rank, host, how), and torchrun's temporary folders do not outlive the run."""

import sys
import textwrap
from pathlib import Path

import pytest

from parabench.errors import ParabenchError
from parabench.runtime.failures import failure_message
from parabench.runtime.launch import run_workers, worker_command

TORCHRUN_SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
======================================================
worker FAILED
------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-24_04:56:57
  host      : node-a
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 4343)  (SIGTERM)
------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-24_04:56:57
  host      : node-b
  rank      : 3 (local_rank: 1)
  exitcode  : {exitcode}
  error_file: <N/A>
======================================================
"""


def test_the_first_failure_is_named_not_the_ranks_torchrun_stopped_after_it():
    killed = failure_message("train@x", 1, TORCHRUN_SUMMARY.format(exitcode="-9 (pid: 4344)  (SIGKILL)"))
    assert "rank 3 (local rank 1) on host node-b was killed by SIGKILL first" in killed and "train@x" in killed
    failed = failure_message("train@x", 1, TORCHRUN_SUMMARY.format(exitcode="1 (pid: 4344)"),
                             last_step="epoch 2 of 3, step 5 of 64")
    assert "rank 3 (local rank 1) on host node-b exited with status 1 first" in failed
    assert "the last step rank 0 finished: epoch 2 of 3, step 5 of 64" in failed


def test_a_single_process_failure_gives_its_status():
    assert "exited with status 2" in failure_message("train@x", 2, "Traceback ...\nValueError: no\n")


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_killed_rank_ends_the_job_with_its_name(tmp_path: Path):
    worker = script(tmp_path, """\
        import os, signal, time
        if os.environ["RANK"] == "1":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    """)
    command = [*worker_command("unused", [], 2)[:-2], str(worker)]
    with pytest.raises(ParabenchError, match=r"rank 1 \(local rank 1\) on host \S+ was killed by SIGKILL first"):
        run_workers(command, 1, "test@killed")


def test_torchrun_leaves_no_folder_in_the_system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    system_temp = tmp_path / "system-temp"
    system_temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_temp))
    worker = script(tmp_path, "import tempfile; tempfile.mkdtemp(prefix='worker-scratch-')\n")
    run_workers([*worker_command("unused", [], 2)[:-2], str(worker)], 1, "test@clean")
    run_workers([sys.executable, str(worker)], 1, "test@clean-single")
    assert list(system_temp.iterdir()) == [], "torchelastic_* and the workers' scratch are removed"
