"""A failed worker is named (rank, host, how), a rank that never reached an NCCL collective is named rather than
the rank torchrun blames, and torchrun's temporary folders do not outlive the run."""

import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from parabench.errors import ParabenchError
from parabench.runtime.failures import failure_message, said_it_stopped
from parabench.runtime.torchrun import run_workers, worker_command

FIXTURES = Path(__file__).parent / "fixtures"

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
    failed = failure_message(
        "train@x", 1, TORCHRUN_SUMMARY.format(exitcode="1 (pid: 4344)"), last_step="epoch 2 of 3, step 5 of 64"
    )
    assert "rank 3 (local rank 1) on host node-b exited with status 1 first" in failed
    # torch 2.11's summary names the signal only on its traceback line: the negative exit code still says which
    older = TORCHRUN_SUMMARY.format(exitcode="-9 (pid: 4344)\n  traceback : Signal 9 (SIGKILL) received by PID 4344")
    assert "rank 3 (local rank 1) on host node-b was killed by SIGKILL first" in failure_message("train@x", 1, older)
    assert "the last step rank 0 finished: epoch 2 of 3, step 5 of 64" in failed


def test_a_single_process_failure_gives_its_status_or_the_signal_that_ended_it():
    assert "exited with status 2" in failure_message("train@x", 2, "Traceback ...\nValueError: no\n")
    assert "the worker(s) of train@x was killed by SIGHUP;" in failure_message("train@x", -1, "")


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_a_killed_rank_ends_the_job_with_its_name(tmp_path: Path):
    worker = script(
        tmp_path,
        """\
        import os, signal, time
        if os.environ["RANK"] == "1":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    """,
    )
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


def recorded(name: str) -> str:
    """A recorded stderr of an NCCL collective's timeout (tests/fixtures/nccl_*.txt): the ranks' lines as torch 2.14's
    ProcessGroupNCCL.cpp words them, printed by stand-in workers, then what real torchrun (2 ranks: rank 0 aborted by
    NCCL, rank 1 hung) or the launcher (4 ranks: killed 5 s after the first watchdog line) made of them."""
    return (FIXTURES / name).read_text()


def without_lines(stderr: str, rank: int, containing: str = "") -> str:
    """The stderr less the lines of `rank` (its c10 prefix `[rankN]:`) that contain `containing`."""
    return "\n".join(
        line for line in stderr.splitlines() if not (line.startswith(f"[rank{rank}]:") and containing in line)
    )


def test_under_nccl_the_rank_that_never_reached_the_collective_is_named_not_the_one_torchrun_blames():
    stderr = recorded("nccl_timeout_2_ranks.txt")
    assert "rank      : 0 (local_rank: 0)\n  exitcode  : -6" in stderr, "torchrun blames rank 0, aborted by NCCL"
    message = failure_message("train@allreduce", 1, stderr)
    assert "rank 1 did not reach the collective (SeqNum 389, ALLREDUCE) within hardware.timeout_s" in message
    assert "rank 0 waited in it until NCCL's watchdog timed it out; NCCL then aborted the waiting ranks" in message
    assert "Look at rank 1's messages above" in message and "raise hardware.timeout_s" in message
    assert "SIGABRT" not in message


def test_of_four_ranks_the_one_that_never_came_is_named_and_the_three_that_waited_are_not():
    message = failure_message("train@allreduce", 1, recorded("nccl_timeout_4_ranks.txt"), hung=["0", "1", "2", "3"])
    assert "rank 2 did not reach the collective (SeqNum 1204, ALLREDUCE)" in message
    assert (
        "ranks 0, 1 and 3 waited in it until NCCL's watchdog timed it out; the workers still running 5 s later "
        "were killed" in message
    )


def test_a_rank_whose_watchdog_had_not_fired_yet_waited_if_it_had_enqueued_the_collective():
    stderr = without_lines(recorded("nccl_timeout_4_ranks.txt"), 3, containing="Watchdog caught")
    stderr = without_lines(stderr, 3, containing="failure detected by watchdog")
    assert "Last enqueued NCCL work: 1204" in stderr, "rank 3 saw rank 1's dump signal after enqueuing SeqNum 1204"
    message = failure_message("train@allreduce", 1, stderr, hung=["0", "1", "2", "3"])
    assert "rank 2 did not reach" in message and "ranks 0, 1 and 3 waited" in message


def test_a_silent_rank_is_named_from_torchruns_summary():
    stderr = without_lines(recorded("nccl_timeout_4_ranks.txt"), 2)  # stopped (SIGSTOP): not even a dump signal
    assert "[rank2]:" not in stderr
    assert "rank 2 did not reach the collective" in failure_message("train@allreduce", 1, stderr)


def test_when_every_rank_here_waited_the_missing_one_is_looked_for_on_the_other_nodes():
    # rank 1 had enqueued SeqNum 389 too: the rank that did not come runs on another node
    stderr = recorded("nccl_timeout_2_ranks.txt")
    stderr = stderr.replace("Last enqueued NCCL work: 388", "Last enqueued NCCL work: 389")
    message = failure_message("train@allreduce", 1, stderr)
    assert "every rank here reached the collective (SeqNum 389, ALLREDUCE)" in message
    assert "ranks 0 and 1 waited" in message and "runs on another node" in message


def test_the_launcher_counts_nccls_watchdog_timeout_as_a_stop():
    watchdog = next(line for line in recorded("nccl_timeout_2_ranks.txt").splitlines() if "Watchdog caught" in line)
    assert said_it_stopped(watchdog)
    assert said_it_stopped("error: rank 0 stopped at epoch 2 step 5 of 64: RuntimeError: Connection closed by peer")
    assert not said_it_stopped(TORCHRUN_SUMMARY.format(exitcode="-9 (pid: 4344)  (SIGKILL)"))


def test_a_rank_hung_under_nccl_is_named_seconds_after_the_watchdog_fires(tmp_path: Path):
    watchdog = next(line for line in recorded("nccl_timeout_2_ranks.txt").splitlines() if "Watchdog caught" in line)
    worker = script(
        tmp_path,
        f"""\
        import os, sys, time
        if os.environ["RANK"] == "0":  # waits in the all-reduce until NCCL's watchdog times it out
            print({watchdog!r}, file=sys.stderr, flush=True)
        time.sleep(60)  # rank 0: NCCL's wait before it aborts; rank 1: hung before the all-reduce
    """,
    )
    command = [*worker_command("unused", [], 2)[:-2], str(worker)]
    started = time.monotonic()
    with pytest.raises(ParabenchError, match=r"rank 1 did not reach the collective \(SeqNum 389, ALLREDUCE\)"):
        run_workers(command, 1, "test@nccl-hung")
    assert time.monotonic() - started < 30, "the workers are killed STOP_GRACE_S after the watchdog, not 60 s later"


def test_the_rank_that_failed_first_is_named_with_its_own_error_and_the_others_as_consequences():
    stderr = (
        "error: rank 1: stopped at epoch 2 step 1 of 78: it lost the connection to another rank, which ended first\n"
        "error: rank 3: no space left on the device: checkpoints/train/x.pt needs 2,856,385 bytes\n"
        + TORCHRUN_SUMMARY.format(exitcode="2 (pid: 4344)")
    )
    message = failure_message("train@x", 1, stderr, last_step="epoch 1 of 2, step 78 of 78 (no checkpoint yet)")
    first, *then = message.splitlines()
    assert first.startswith("train@x failed on rank 3 (local rank 1) on host node-b: no space left on the device")
    assert then[0].startswith("  then rank 1: stopped at epoch 2 step 1 of 78: it lost the connection")
    assert then[1] == "  the last step rank 0 finished: epoch 1 of 2, step 78 of 78 (no checkpoint yet)"


def test_a_real_job_names_the_rank_whose_error_ended_it_not_the_peer_that_lost_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
):
    """Two gloo ranks under torchrun: rank 0 fails with a user error while rank 1 waits in an all-reduce; the job's
    message is rank 0's error, rank 1's lost connection is told as what followed, and no traceback is printed."""
    worker = script(
        tmp_path,
        """\
        import os
        import torch
        import torch.distributed as dist
        from parabench.cli import stage_main
        from parabench.engine.training import StepFailed
        from parabench.errors import DiskFull, RunStopped

        def main():
            dist.init_process_group("gloo")
            if dist.get_rank() == 0:
                raise DiskFull("no space left on the device: checkpoints/train/x.pt needs 2,856,385 bytes")
            try:
                dist.all_reduce(torch.ones(1))
            except Exception as err:
                raise RunStopped(f"stopped at epoch 2 {StepFailed(1, 78, err)}") from err

        stage_main(main)
    """,
    )
    command = [*worker_command("unused", [], 2)[:-2], str(worker)]
    with pytest.raises(ParabenchError) as failed:
        run_workers(command, 1, "train@x")
    first, *then = str(failed.value).splitlines()
    assert re.match(r"train@x failed on rank 0 \(local rank 0\) on host \S+: no space left on the device", first)
    assert then and then[0].startswith("  then rank 1: stopped at epoch 2 step 1 of 78: it lost the connection to")
    passed_through = capfd.readouterr().err
    assert "error: rank 0: no space left" in passed_through and "Traceback" not in passed_through, passed_through
    assert "Root Cause" not in passed_through, "torchrun's table is read by the launcher, not shown"


def test_a_job_ended_by_ctrl_c_is_an_interrupt_not_a_failure(tmp_path: Path):
    """The agent exits 130 after Ctrl-C reached it (torchrun handles SIGINT itself), even where the stage itself
    ignored the signal (started in the background): the stage says `interrupted`, not that a worker failed."""
    with pytest.raises(KeyboardInterrupt):
        run_workers([sys.executable, "-c", "raise SystemExit(130)"], 1, "test@interrupted")
