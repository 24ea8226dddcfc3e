"""How every stage script starts: logging set up, user errors printed as one clear message, exit 2."""

import logging
import sys
from collections.abc import Callable

from parabench.errors import ParabenchError


def stage_main(main: Callable[[], None]) -> None:
    """Run a stage's `main`; a ParabenchError becomes `error: ...` on stderr and exit status 2."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        main()
    except ParabenchError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
