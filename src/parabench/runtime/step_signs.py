"""What the operating system saw of this process over one timed step: its CPU time, the time its threads waited for
a CPU, the time the hypervisor stole, context switches, page faults and the garbage collector's runs (Linux's /proc and
getrusage; where /proc does not tell, None)."""

import gc
import os
import resource
import time
from dataclasses import dataclass

from parabench.records import CellTurn, StepSigns

CPUS = "/sys/devices/system/cpu"  # cpu<N>/cpuidle/state<K>/time: microseconds each CPU spent idle, by idle state
TASKS = "/proc/self/task"  # one folder per thread of this process, each with its schedstat
STAT = "/proc/stat"  # the machine's CPU time by kind, its first line summed over every CPU, in clock ticks


def _waited_s() -> float | None:
    """Seconds this process's threads have spent runnable but waiting for a CPU (schedstat's run_delay, summed over
    the threads alive now; a thread that ended takes its count with it)."""
    total = 0
    try:
        tasks = os.listdir(TASKS)
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"{TASKS}/{task}/schedstat", "rb") as schedstat:
                total += int(schedstat.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile, or the kernel keeps no schedstat
    return total / 1e9


def _idle_cpu_files() -> tuple[list[str], int]:
    """Every idle state's time file of every CPU (cpuidle), and how many CPUs they cover; none without cpuidle."""
    try:
        cpus = [name for name in os.listdir(CPUS) if name.startswith("cpu") and name[3:].isdigit()]
    except OSError:
        return [], 0
    folders = [f"{CPUS}/{cpu}/cpuidle" for cpu in cpus if os.path.isdir(f"{CPUS}/{cpu}/cpuidle")]
    if len(folders) != len(cpus):
        return [], 0  # idle time of only some CPUs would count the others' idling as busy
    files = [f"{folder}/{state}/time" for folder in folders for state in os.listdir(folder) if state[:5] == "state"]
    return files, len(cpus)


IDLE_FILES, IDLE_CPUS = _idle_cpu_files()


def _idle_s() -> float | None:
    """Seconds every CPU of the machine has spent idle, together (cpuidle's microseconds); None without cpuidle."""
    if not IDLE_FILES:
        return None
    total = 0
    for path in IDLE_FILES:
        with open(path, "rb") as microseconds:
            total += int(microseconds.read())
    return total / 1e6


def _steal_s() -> float | None:
    """Seconds the hypervisor has run something else on this machine's CPUs, all of them together (/proc/stat)."""
    try:
        with open(STAT, encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None


@dataclass(frozen=True)
class OsMark:
    """The process's counters at one moment."""

    wall_s: float
    cpu_s: float
    idle_s: float | None
    waited_s: float | None
    steal_s: float | None
    involuntary_switches: int
    minor_faults: int
    major_faults: int
    collections: int


def os_mark() -> OsMark:
    """Read the counters now (about 0.1 ms: a file per thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return OsMark(
        wall_s=time.perf_counter(),
        cpu_s=usage.ru_utime + usage.ru_stime,
        idle_s=_idle_s(),
        waited_s=_waited_s(),
        steal_s=_steal_s(),
        involuntary_switches=usage.ru_nivcsw,
        minor_faults=usage.ru_minflt,
        major_faults=usage.ru_majflt,
        collections=sum(generation["collections"] for generation in gc.get_stats()),
    )


def _difference(end: float | None, start: float | None) -> float | None:
    return None if end is None or start is None else max(0.0, end - start)


def signs_between(start: OsMark, end: OsMark, wall_s: float) -> StepSigns:
    """What the OS saw between two marks taken around a step of `wall_s` seconds."""
    idle = _difference(end.idle_s, start.idle_s)
    return StepSigns(
        wall_s=wall_s,
        cpu_s=max(0.0, end.cpu_s - start.cpu_s),
        machine_busy_s=None if idle is None else max(0.0, (end.wall_s - start.wall_s) * IDLE_CPUS - idle),
        waited_s=_difference(end.waited_s, start.waited_s),
        steal_s=_difference(end.steal_s, start.steal_s),
        involuntary_switches=end.involuntary_switches - start.involuntary_switches,
        minor_faults=end.minor_faults - start.minor_faults,
        major_faults=end.major_faults - start.major_faults,
        collections=end.collections - start.collections,
    )


DISTURBED_SHARE = 0.10  # others took more than this share of one CPU during a step: it was disturbed
FAULT_COST_S = 0.7e-6  # what a minor page fault costs a step, as measured on this project's machines (docs/metrics.md)
FAULTS_SHARE = 0.05  # a step whose page faults cost more than this share of it was disturbed
KEPT_AT_LEAST = 0.5  # disturbed steps are left out only while the rest are at least this share of a cell's steps


def disturbance(ranks: list[StepSigns]) -> str | None:
    """Why a step was disturbed, from every rank's signs of it, or None: other programs or the hypervisor took more than
    DISTURBED_SHARE of a CPU meanwhile (the machine's busy time beyond every rank's own CPU time, in the quietest
    rank's window; without cpuidle, the hypervisor's steal alone), pages were read back from disk, or page faults cost
    more than FAULTS_SHARE of the step. What a cell's own threads do to each other (gloo's threads taking a core from
    the compute threads) is its work, not a disturbance."""
    wall = max(signs.wall_s for signs in ranks)
    busy = [signs.machine_busy_s for signs in ranks]
    steal = [signs.steal_s for signs in ranks]
    if all(seconds is not None for seconds in busy):
        others = min(seconds for seconds in busy if seconds is not None) - sum(signs.cpu_s for signs in ranks)
    elif all(seconds is not None for seconds in steal):
        others = max(seconds for seconds in steal if seconds is not None)
    else:
        others = 0.0
    if others > DISTURBED_SHARE * wall:
        return "other programs"
    if any(signs.major_faults for signs in ranks):
        return "disk reads"
    if max(signs.minor_faults for signs in ranks) * FAULT_COST_S > FAULTS_SHARE * wall:
        return "page faults"
    return None


def kept(turns: list[CellTurn]) -> list[list[bool]]:
    """Per turn, per step, whether the step counts: every undisturbed one, while they are at least KEPT_AT_LEAST of
    the cell's steps. Where more were disturbed, the machine was busy the whole time rather than now and then: every
    step counts, disturbed ones too (the cell is then `contended`), since what is left would not be its figure."""
    quiet = [
        [disturbance(step_signs(turn, index)) is None for index in range(len(turn.step_durations))] for turn in turns
    ]
    steps = sum(len(flags) for flags in quiet)
    if sum(map(sum, quiet)) < KEPT_AT_LEAST * steps:
        return [[True] * len(flags) for flags in quiet]
    return quiet


def kept_steps(turns: list[CellTurn]) -> list[list[float]]:
    """The cell's step times, turn by turn, the disturbed steps left out (kept)."""
    return [
        [step for step, keep in zip(turn.step_durations, flags, strict=True) if keep]
        for turn, flags in zip(turns, kept(turns), strict=True)
    ]


def kept_phases(turns: list[CellTurn]) -> list[list[list[dict[str, float]]]]:
    """The cell's phases, turn by turn (per rank, per step), the disturbed steps left out (kept)."""
    return [
        [[phases for phases, keep in zip(rank, flags, strict=True) if keep] for rank in turn.phase_durations]
        for turn, flags in zip(turns, kept(turns), strict=True)
    ]


def step_signs(turn: CellTurn, index: int) -> list[StepSigns]:
    """Every rank's signs of the turn's `index`-th step."""
    return [rank[index] for rank in turn.signs]


def disturbances(turns: list[CellTurn]) -> dict[str, int]:
    """How many steps of the turns were disturbed, by why."""
    counted: dict[str, int] = {}
    for turn in turns:
        for index in range(len(turn.step_durations)):
            why = disturbance(step_signs(turn, index))
            if why is not None:
                counted[why] = counted.get(why, 0) + 1
    return counted
