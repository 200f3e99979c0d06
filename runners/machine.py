"""What this machine offers a process: the CPUs it may run on."""

from __future__ import annotations

import os


def available_cpus() -> int:
    """Cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
