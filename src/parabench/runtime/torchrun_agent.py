"""torchrun (torch.distributed.run, unchanged), leaving to its launcher (runtime/torchrun.py) what that says better.

torchrun ends a failed job with a traceback of its own code, holding its table of the ranks that failed, an
interrupted one (Ctrl-C, SIGTERM) with a traceback of the signal, and one that could not start (a rendezvous that
timed out) with a traceback around the reason. Here the table goes to $PARABENCH_FAILURES_FILE, where the launcher
reads which rank failed first (runtime/failures.py); a signal ends the agent with the shell's status for it (128 +
the signal), silently; a reason is one line. The stage then says what happened, in one sentence.

    python -m parabench.runtime.torchrun_agent [torchrun's arguments]
"""

import logging
import os
import sys
from pathlib import Path

from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.run import main as torchrun

from parabench.runtime.torchrun import FAILURES_ENV


def main() -> None:
    """Run torchrun on this command line; a failed or interrupted job ends without a traceback."""
    # torchrun's own log at $LOGLEVEL (WorkerJob: ERROR unless set), its modules that log without it included
    logging.getLogger("torch.distributed.elastic").setLevel(os.environ.get("LOGLEVEL", "WARNING"))
    try:
        torchrun()
    except SignalException as signalled:
        sys.exit(128 + int(signalled.sigval))
    except ChildFailedError as failed:
        where = os.environ.get(FAILURES_ENV)
        if where is None:  # not started by a WorkerJob: the table where torchrun would show it
            print(failed.format_msg(), file=sys.stderr)
        else:
            Path(where).write_text(failed.format_msg())
        sys.exit(1)
    except Exception as err:  # before any worker ran: a rendezvous that timed out, a port in use; its words suffice
        print(f"torchrun: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
