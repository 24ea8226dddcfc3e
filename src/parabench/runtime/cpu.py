"""The CPU as /proc/cpuinfo describes it: its model name and its vector extensions (no torch needed)."""

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
