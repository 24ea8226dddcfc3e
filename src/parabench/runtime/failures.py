"""Why a job's workers failed, in one message: from torchrun's summary, the ranks' own last words and the progress
rank 0 noted, with what to do."""

import re

ROOT_CAUSE = re.compile(
    r"Root Cause \(first observed failure\):.*?host\s*:\s*(?P<host>\S+).*?rank\s*:\s*(?P<rank>\d+)\s*"
    r"\(local_rank:\s*(?P<local_rank>\d+)\).*?exitcode\s*:\s*(?P<exitcode>-?\d+)[^\n]*?(?:\((?P<signal>SIG\w+)\))?\n",
    re.DOTALL,
)
JOIN_TIMEOUT = re.compile(r"waiting for clients\. (?P<joined>\d+)/(?P<nodes>\d+) clients joined")
STOPPED_AT = re.compile(r"^error: (rank \d+\b.*)$", re.MULTILINE)  # what a worker said when it stopped
STOP_GRACE_S = 5.0  # once a worker has said it stopped, the others get this long to end before they are killed


def failure_message(what: str, status: int, stderr_tail: str, hung: list[str] | None = None,
                    last_step: str | None = None) -> str:
    """Which worker failed first and how (from torchrun's summary when there is one), where the ranks that
    noticed it stopped (their `error: rank N stopped at ...` lines), and what to do."""
    late = JOIN_TIMEOUT.search(stderr_tail)
    if late is not None:
        nodes = int(late["nodes"])
        return (
            f"{what}: only {late['joined']} of {nodes} nodes joined the rendezvous within hardware.join_timeout_s; "
            f"the others (node ranks 1 to {nodes - 1}, less those that came) did not arrive. Start each with the "
            "`python -m parabench.engine.join` line printed above, within the timeout, then run again."
        )
    cause = ROOT_CAUSE.search(stderr_tail)
    where = "".join(f"\n  {line}" for line in dict.fromkeys(STOPPED_AT.findall(stderr_tail)))
    if last_step is not None:
        where += f"\n  the last step rank 0 finished: {last_step}"
    if hung is not None:
        still = f"rank {', '.join(hung)}" if hung else "the other workers"
        return (
            f"the worker(s) of {what} stopped:{where}\n{still} still ran {STOP_GRACE_S:.0f} s later (hung or stopped: "
            "hardware.timeout_s bounds how long a collective waits for it) and was killed. Their messages are "
            "above. Run again to resume from the last epoch checkpoint."
        )
    if cause is None:
        return f"the worker(s) of {what} exited with status {status}{where}; their messages are above."
    how = f"was killed by {cause['signal']}" if cause["signal"] else f"exited with status {cause['exitcode']}"
    return (
        f"the worker(s) of {what} failed: rank {cause['rank']} (local rank {cause['local_rank']}) on host "
        f"{cause['host']} {how} first, and torchrun stopped the others{where}\nTheir messages are above. Run "
        "again to resume from the last epoch checkpoint."
    )
