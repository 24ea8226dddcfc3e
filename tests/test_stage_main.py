"""How a stage ends: a user error as one `error:` line (exit 2), Ctrl-C as one line (exit 130), no traceback."""

import subprocess
import sys
import textwrap


def run_stage(body: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""\
        from parabench.cli import stage_main
        from parabench.errors import ConfigError

        def main():
            {body}

        stage_main(main)
    """)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_ctrl_c_is_one_line_and_exit_130():
    done = run_stage("raise KeyboardInterrupt")
    assert done.returncode == 130
    assert done.stderr.startswith("interrupted: ") and "run again to resume" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_a_user_error_is_one_message_and_exit_2():
    done = run_stage("raise ConfigError('params.yaml: strategy: bad; choose one of: single')")
    assert (done.returncode, done.stderr) == (2, "error: params.yaml: strategy: bad; choose one of: single\n")
