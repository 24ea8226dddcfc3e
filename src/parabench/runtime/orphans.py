"""No orphans: a process asks the kernel to signal it when the process that started it dies, even by SIGKILL."""

import os
import signal

from parabench.runtime.libc import LIBC

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Have the kernel send `sig` to this process when its parent dies (Linux's PR_SET_PDEATHSIG; elsewhere nothing).

    Call it first thing in a worker (or, through `preexec_fn`, in a launcher before it runs): should the parent have
    died already, before the request was made, the process ends now instead of running on as an orphan.
    """
    if LIBC is None:
        return
    parent = os.getppid()
    if LIBC.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        return  # a kernel that refuses: the launcher's own clean-up still applies
    if os.getppid() != parent:  # the parent died before the request: its signal will not come
        os.kill(os.getpid(), sig)
