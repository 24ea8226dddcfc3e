"""The C library, loaded once for the few calls this project makes to it (prctl, malloc_trim); None off Linux.

Loaded at import: a child between fork and exec (preexec_fn) must not load libraries while a thread of its parent
may have held the loader's lock.
"""

import ctypes
import sys

LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
