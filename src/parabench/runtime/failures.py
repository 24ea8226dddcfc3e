"""Why a job's workers failed, in one message: from torchrun's summary, the ranks' own last words and the progress
rank 0 noted, with what to do."""

import re
import signal
from dataclasses import dataclass

ROOT_CAUSE = re.compile(
    r"Root Cause \(first observed failure\):.*?host\s*:\s*(?P<host>\S+).*?rank\s*:\s*(?P<rank>\d+)\s*"
    r"\(local_rank:\s*(?P<local_rank>\d+)\).*?exitcode\s*:\s*(?P<exitcode>-?\d+)[^\n]*?(?:\((?P<signal>SIG\w+)\))?\n",
    re.DOTALL,
)
JOIN_TIMEOUT = re.compile(r"waiting for clients\. (?P<joined>\d+)/(?P<nodes>\d+) clients joined")
STOPPED_AT = re.compile(r"^error: (rank \d+\b.*)$", re.MULTILINE)  # what a worker said when it stopped
STOP_GRACE_S = 5.0  # once a worker has said it stopped, the others get this long to end before they are killed
# NCCL's watchdog on a rank that waited in a collective for the group's timeout (ProcessGroupNCCL.cpp, checkTimeout):
# "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=389, OpType=ALLREDUCE, ...) ran for ..."
WATCHDOG_TIMEOUT = re.compile(
    r"\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: "
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)"
)
# How far a rank got, in the same file's lines tagged "[PG ID 0 PG GUID 0(default_pg) Rank 1]" (older torch: "[PG 0
# Rank 1]"): "failure detected by watchdog ... last enqueued work: 389", "Received a dump signal ... Last enqueued
# NCCL work: 388" (a rank that saw another's timeout), "Timeout at NCCL work: 389, last enqueued NCCL work: 389".
LAST_ENQUEUED = re.compile(r"\bRank (?P<rank>\d+)\] .*?[Ll]ast enqueued (?:NCCL )?work: (?P<seq>-?\d+)")
# Every rank the stderr names: c10's "[rank1]:" line prefix, NCCL's "Rank 1]" tags, torchrun's "rank : 1" entries.
NAMED_RANK = re.compile(
    r"\[rank(?P<prefix>\d+)\]:|\bRank (?P<tag>\d+)\]|^\s*rank\s*:\s*(?P<entry>\d+) \(local_rank", re.MULTILINE
)


def said_it_stopped(stderr_tail: str) -> bool:
    """True once a worker said it stopped (`error: rank N stopped at ...`) or NCCL's watchdog caught a collective
    that timed out: the ranks still running are then hung or waiting in vain."""
    return STOPPED_AT.search(stderr_tail) is not None or WATCHDOG_TIMEOUT.search(stderr_tail) is not None


@dataclass(frozen=True)
class CollectiveTimeout:
    """A collective NCCL's watchdog timed out: which one, the ranks that waited in it and those that never came."""

    seq: int
    op: str
    waited: list[int]
    missing: list[int]


def collective_timeout(stderr_tail: str, killed: list[str] | None = None) -> CollectiveTimeout | None:
    """The first collective NCCL's watchdog timed out, if it did, with the ranks that reached it and those that did not.

    A rank reached it when its watchdog timed it out or it reported a last enqueued work at or past its SeqNum (the
    ranks that saw another's timeout report theirs). The ranks that did not: every other rank this node's stderr
    names (c10's `[rankN]:` prefixes, NCCL's `Rank N]` tags, torchrun's summary) or the launcher killed. SeqNums count
    one process group's collectives: parabench's all run in the default group.
    """
    timeouts = list(WATCHDOG_TIMEOUT.finditer(stderr_tail))
    if not timeouts:
        return None
    first = min(timeouts, key=lambda timeout: int(timeout["seq"]))
    seq = int(first["seq"])
    reached = {int(timeout["rank"]) for timeout in timeouts if int(timeout["seq"]) >= seq}
    reached |= {int(line["rank"]) for line in LAST_ENQUEUED.finditer(stderr_tail) if int(line["seq"]) >= seq}
    named = {
        int(next(rank for rank in match.groups() if rank is not None)) for match in NAMED_RANK.finditer(stderr_tail)
    }
    named |= {int(rank) for rank in killed or []}
    return CollectiveTimeout(seq=seq, op=first["op"], waited=sorted(reached), missing=sorted(named - reached))


def ranks_named(ranks: list[int]) -> str:
    """`rank 1` or `ranks 0, 1 and 3`."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return f"ranks {', '.join(map(str, ranks[:-1]))} and {ranks[-1]}"


def failure_message(
    what: str, status: int, stderr_tail: str, hung: list[str] | None = None, last_step: str | None = None
) -> str:
    """Which worker failed first and how (from torchrun's summary when there is one), where the ranks that
    noticed it stopped (their `error: rank N stopped at ...` lines), and what to do. When NCCL's watchdog timed a
    collective out, the ranks that never reached it instead: torchrun blames the first waiting rank NCCL aborted."""
    late = JOIN_TIMEOUT.search(stderr_tail)
    if late is not None:
        nodes = int(late["nodes"])
        return (
            f"{what}: only {late['joined']} of {nodes} nodes joined the rendezvous within hardware.join_timeout_s; "
            f"the others (node ranks 1 to {nodes - 1}, less those that came) did not arrive. Start each with the "
            "join line printed above (`python -m parabench.engine.join ...`, or `join_probe` for the probe), within "
            "the timeout, then run again."
        )
    cause = ROOT_CAUSE.search(stderr_tail)
    said = list(dict.fromkeys(STOPPED_AT.findall(stderr_tail)))  # each rank's last words, once, in order
    where = "".join(f"\n  {line}" for line in said)
    if last_step is not None:
        where += f"\n  the last step rank 0 finished: {last_step}"
    timeout = collective_timeout(stderr_tail, hung)
    if timeout is not None:
        return timeout_message(what, timeout, where, hung is not None)
    if hung is not None:
        still = f"rank {', '.join(hung)}" if hung else "the other workers"
        return (
            f"the worker(s) of {what} stopped:{where}\n{still} still ran {STOP_GRACE_S:.0f} s later (hung or stopped: "
            "hardware.timeout_s bounds how long a collective waits for it) and was killed. Their messages are "
            "above. Run again to resume from the last epoch checkpoint."
        )
    if cause is None:  # one plain process, or torchrun itself: a negative status is the signal that ended it
        return f"the worker(s) of {what} {worker_end(status, None)}{where}; their messages are above."
    rank = cause["rank"]
    own = next((line for line in said if line.startswith(f"rank {rank}: ")), None)
    first = f"rank {rank} (local rank {cause['local_rank']}) on host {cause['host']}"
    if own is not None:  # the rank that failed first said why: that is the cause, the others' ends its consequences
        then = "".join(f"\n  then {line}" for line in said if line != own)
        if last_step is not None:
            then += f"\n  the last step rank 0 finished: {last_step}"
        return f"{what} failed on {first}: {own.removeprefix(f'rank {rank}: ')}{then}"
    how = worker_end(int(cause["exitcode"]), cause["signal"])
    return (
        f"the worker(s) of {what} failed: {first} {how} first, and torchrun stopped the others{where}\nTheir "
        "messages are above. Run again to resume from the last epoch checkpoint."
    )


def worker_end(exitcode: int, signal_name: str | None) -> str:
    """How a worker ended: the signal torchrun named, or the one a negative exit code stands for (torch 2.11 names it
    only on the summary's traceback line), or its exit status."""
    if signal_name is None and exitcode < 0:
        signal_name = signal.Signals(-exitcode).name if -exitcode in signal.valid_signals() else None
    return f"was killed by {signal_name}" if signal_name else f"exited with status {exitcode}"


def timeout_message(what: str, timeout: CollectiveTimeout, where: str, killed: bool) -> str:
    """Which ranks never reached the collective NCCL's watchdog timed out, which waited in it, and what to do."""
    collective = f"the collective (SeqNum {timeout.seq}, {timeout.op})"
    ended = (
        f"the workers still running {STOP_GRACE_S:.0f} s later were killed"
        if killed
        else "NCCL then aborted the waiting ranks"
    )
    waited = f"{ranks_named(timeout.waited)} waited in it until NCCL's watchdog timed it out; {ended}"
    if not timeout.missing:
        return (
            f"the worker(s) of {what} stopped: every rank here reached {collective}, which did not complete within "
            f"hardware.timeout_s; {waited}{where}\nThe rank that did not come runs on another node (look at its "
            "messages there), or the collective itself stalled (network, GPU). Run again to resume from the last "
            "epoch checkpoint."
        )
    missing = ranks_named(timeout.missing)
    return (
        f"the worker(s) of {what} stopped: {missing} did not reach {collective} within hardware.timeout_s; "
        f"{waited}{where}\nLook at {missing}'s messages above for where it stopped (an error, a hang); if its "
        "step is legitimately that long, raise hardware.timeout_s. Run again to resume from the last epoch checkpoint."
    )
