"""How busy the machine was with other work while we timed: CPU time not ours, from /proc/stat, and load average."""

import os
import resource
import time
from dataclasses import dataclass

from parabench.runtime.collectives import gather_objects

# A measurement counts as contended when other work took more than this share of the machine's CPU time.
CONTENDED_SHARE = 0.10
# /proc/stat counts in clock ticks (10 ms): over 0.25 s a machine of 2 cores has 50 ticks, and a reading is off by a
# tick or two at either end, a few percent of the share, under CONTENDED_SHARE; shorter intervals tell nothing.
SHORTEST_INTERVAL_S = 0.25


def machine_cpu_seconds() -> float | None:
    """CPU seconds all cores have spent busy since boot (user, nice, system, irq, softirq, steal); None off Linux."""
    try:
        with open("/proc/stat", encoding="utf-8") as stat:
            fields = stat.readline().split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """CPU seconds this process (all its threads) has used."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class LoadMark:
    """A point in time: wall clock, the machine's busy CPU seconds, this process's CPU seconds."""

    wall: float
    machine_cpu: float | None
    own_cpu: float


def mark() -> LoadMark:
    """Read the clocks now."""
    return LoadMark(wall=time.monotonic(), machine_cpu=machine_cpu_seconds(), own_cpu=own_cpu_seconds())


def other_cpu_share(start: LoadMark, end: LoadMark, own_cpu_seconds_all_ranks: float) -> float | None:
    """Share (0 to 1) of the machine's CPU capacity (all its CPUs, as /proc/stat counts them) that other
    programs used between two marks.

    `own_cpu_seconds_all_ranks` is the CPU time every process of this job spent in the interval, summed.
    None off Linux, or when the interval is too short for /proc/stat's clock ticks to tell.
    """
    cores = os.cpu_count() or 1
    wall = end.wall - start.wall
    if start.machine_cpu is None or end.machine_cpu is None or wall < SHORTEST_INTERVAL_S:
        return None
    others = (end.machine_cpu - start.machine_cpu) - own_cpu_seconds_all_ranks
    return min(1.0, max(0.0, others / (wall * cores)))


def job_other_cpu_share(start: LoadMark, end: LoadMark) -> float | None:
    """other_cpu_share between two marks that every process of the job took (a collective): all ranks' CPU time
    counts as ours."""
    own = sum(gather_objects(end.own_cpu - start.own_cpu))
    return other_cpu_share(start, end, own)


def load_average() -> float:
    """The machine's load average over the last minute (runnable threads, ours included)."""
    return os.getloadavg()[0]
