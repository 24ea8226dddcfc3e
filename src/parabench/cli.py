"""How every stage script starts: logging set up, user errors printed as one clear message (exit 2), Ctrl-C as one
line (exit 130, the shell's code for SIGINT), and how long it took (so a run's log says where its minutes went)."""

import logging
import sys
import time
from collections.abc import Callable

from parabench.errors import ParabenchError


def stage_main(main: Callable[[], None]) -> None:
    """Run a stage's `main`; a ParabenchError becomes `error: ...` on stderr and exit status 2.

    Every file a stage writes is written atomically (a temporary name, then a rename) and downloads verify their
    checksum before the rename, so an interrupted stage leaves nothing that passes for a finished output.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    started = time.monotonic()
    try:
        main()
        logging.getLogger("parabench").info("%s took %.1f s", " ".join(sys.argv), time.monotonic() - started)
    except ParabenchError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(
            f"interrupted: {' '.join(sys.argv)}; run again to resume (a download continues from its partial file "
            "in data/raw/.partial/, training from its last epoch checkpoint).",
            file=sys.stderr,
        )
        sys.exit(130)
