"""The CPU as the OS describes it: its model name and vector extensions (/proc/cpuinfo), and the cores this process may
run on (no torch needed)."""

import os
import platform


def cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    """The vector extensions the CPU reports (AVX2, AVX-512 and friends), from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return sorted(flag for flag in line.split(":", 1)[1].split() if flag.startswith(("avx", "amx")))
    except OSError:
        pass
    return []


def usable_cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
