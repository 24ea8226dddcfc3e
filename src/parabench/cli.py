"""How every stage script and worker starts: logging set up, user errors printed as one clear message (exit 2), a
file the system refused (full disk, missing, no permission) likewise, Ctrl-C as one line naming the stage and how
far it got (exit 130, the shell's code for SIGINT), and how long it took (so a run's log says where its minutes
went)."""

import logging
import os
import sys
import time
from collections.abc import Callable

from parabench.errors import Interrupted, ParabenchError
from parabench.io import NO_SPACE

WORKER_ENV = "PARABENCH_WORKER"  # set by runtime.torchrun.WorkerJob for the processes it starts: its launcher speaks
INTERRUPTED_STATUS = 130


def stage_main(main: Callable[[], None], timed: bool = True) -> None:
    """Run a stage's (or a worker's) `main`; a ParabenchError becomes `error: ...` on stderr and exit status 2.
    `timed`: log how long it took (not for a report printed to the screen, whose last line is its own).

    A worker's error names its rank (`error: rank 1: ...`), for its launcher to say which rank failed first; a
    worker says nothing of Ctrl-C, which reaches its launcher too: the stage says it once (`interrupted: stage ...`).
    Every file a stage writes is written atomically (a temporary name, then a rename) and downloads verify their
    checksum before the rename, so an interrupted stage leaves nothing that passes for a finished output.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    started = time.monotonic()
    worker = WORKER_ENV in os.environ
    try:
        try:
            main()
        except OSError as err:  # the net under every stage: a file's fault the code did not name itself
            sentence = file_fault(err)
            if sentence is None:
                raise
            raise ParabenchError(sentence) from err
        if timed:
            logging.getLogger("parabench").info("%s took %.1f s", " ".join(sys.argv), time.monotonic() - started)
    except ParabenchError as err:
        rank = os.environ.get("RANK")
        print(f"error: rank {rank}: {err}" if worker and rank else f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as interrupt:
        if not worker:
            print(interrupted_line(interrupt), file=sys.stderr)
        sys.exit(INTERRUPTED_STATUS)


def file_fault(err: OSError) -> str | None:
    """One sentence for a file the system refused (a full disk, no such file, no permission), naming it and what to
    do; None for other OS errors, which stay tracebacks: they are parabench's to explain."""
    name = err.filename or "a file"
    if err.errno in NO_SPACE:
        return (
            f"no space left on the device while writing {name}; free space there and run again (outputs are written "
            "whole or not at all: the earlier ones are kept)."
        )
    if isinstance(err, FileNotFoundError) and err.filename:
        return (
            f"{name}: no such file. If a stage writes it, `dvc repro` (without -s) makes it again, or "
            f"`dvc checkout {name}` restores DVC's copy."
        )
    if isinstance(err, PermissionError) and err.filename:
        return f"{name}: permission denied; give this user access to it (and its folder), then run again."
    return None


def interrupted_line(interrupt: KeyboardInterrupt) -> str:
    """`interrupted: stage train@fashion_mnist after epoch 2 of 2, step 43 of 78 (...). Run `dvc repro` again: ...`:
    the stage as DVC names it ($DVC_STAGE; the command line outside DVC), how far it got, what a rerun resumes."""
    stage = os.environ.get("DVC_STAGE") or " ".join(sys.argv)
    if isinstance(interrupt, Interrupted):
        return (
            f"interrupted: stage {stage} {interrupt}. Run `dvc repro` again: training resumes after the last "
            "checkpoint (from the start when there is none)."
        )
    return (
        f"interrupted: stage {stage}; nothing it left counts as its output. Run `dvc repro` again: a download "
        "continues from its partial file in data/raw/.partial/, any other stage starts over."
    )
