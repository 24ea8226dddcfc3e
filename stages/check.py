"""Stage check: the head of the pipeline, run at every `dvc repro` (always_changed), before any other stage.

It validates params.yaml and plans every run, so a bad value stops the pipeline before DVC removes any stage's
outputs; then it writes the machine's identity (CPU model and vector ISA, cores, GPUs, torch: the timing stages
depend on it, so on another machine they re-run) and each dataset's source record (a local folder's fingerprint:
the download stage re-runs when the folder's files change). When nothing it depends on has changed since it last
passed (parabench/engine/check_memo.py), it repeats that check's findings without importing torch or planning.
"""

from parabench.cli import stage_main
from parabench.engine.check_memo import recall


def check_unless_unchanged() -> None:
    """The whole check, unless the last passing one still stands."""
    if not recall():
        from parabench.engine.check import check  # torch and the planner: imported only when they are needed

        check()


if __name__ == "__main__":
    stage_main(check_unless_unchanged)
