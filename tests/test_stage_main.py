"""How a stage ends: a user error as one `error:` line (exit 2), Ctrl-C as one line naming the stage and how far it
got (exit 130), no traceback; a worker names its rank in an error and leaves Ctrl-C to its launcher."""

import os
import subprocess
import sys
import textwrap


def run_stage(body: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""\
        from parabench.cli import stage_main
        from parabench.errors import ConfigError, Interrupted

        def main():
            {body}

        stage_main(main)
    """)
    environment = {key: value for key, value in os.environ.items() if key not in ("DVC_STAGE", "RANK")}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**environment, **env}
    )


def test_ctrl_c_is_one_line_naming_the_stage_and_exit_130():
    done = run_stage("raise KeyboardInterrupt", DVC_STAGE="download@hotdog")
    assert done.returncode == 130
    assert done.stderr.startswith("interrupted: stage download@hotdog;") and "Run `dvc repro` again" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_ctrl_c_during_training_says_how_far_it_got():
    done = run_stage(
        "raise Interrupted('after epoch 2 of 3, step 5 of 64 (the last checkpoint holds epoch 1)')",
        DVC_STAGE="train@fashion_mnist",
    )
    assert done.returncode == 130 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("interrupted: stage train@fashion_mnist after epoch 2 of 3, step 5 of 64 (the last")
    assert "training resumes after the last checkpoint" in done.stderr


def test_outside_dvc_the_command_line_names_the_stage():
    done = run_stage("raise KeyboardInterrupt")
    assert done.returncode == 130 and done.stderr.startswith("interrupted: stage -c;")


def test_a_user_error_is_one_message_and_exit_2():
    done = run_stage("raise ConfigError('params.yaml: strategy: bad; choose one of: single')")
    assert (done.returncode, done.stderr) == (2, "error: params.yaml: strategy: bad; choose one of: single\n")


def test_a_worker_names_its_rank_in_an_error_and_leaves_ctrl_c_to_its_launcher():
    failed = run_stage("raise ConfigError('disk full')", PARABENCH_WORKER="1", RANK="3", DVC_STAGE="train@x")
    assert (failed.returncode, failed.stderr) == (2, "error: rank 3: disk full\n")
    interrupted = run_stage("raise KeyboardInterrupt", PARABENCH_WORKER="1", RANK="3", DVC_STAGE="train@x")
    assert (interrupted.returncode, interrupted.stderr) == (130, ""), "the stage that launched it says it, once"


def test_a_file_the_system_refused_is_one_sentence_naming_it():
    full = run_stage("import errno; raise OSError(errno.ENOSPC, 'No space left on device', 'results/x.json')")
    assert full.returncode == 2 and full.stderr.startswith("error: no space left on the device while writing ")
    assert "results/x.json" in full.stderr and full.stderr.count("\n") == 1
    missing = run_stage("open('plots/figures/x.png', 'rb')")
    assert missing.returncode == 2 and missing.stderr.startswith("error: plots/figures/x.png: no such file.")
    assert "dvc checkout plots/figures/x.png" in missing.stderr and "Traceback" not in missing.stderr
    refused = run_stage("raise PermissionError(13, 'Permission denied', 'models/train/x.pt')")
    assert refused.returncode == 2 and refused.stderr.startswith("error: models/train/x.pt: permission denied;")


def test_an_os_error_that_names_no_file_stays_a_traceback_for_a_bug_report():
    other = run_stage("raise ConnectionResetError(104, 'Connection reset by peer')")
    assert other.returncode == 1 and "Traceback" in other.stderr
