"""Let freed arrays go back to the operating system during a large aggregation (glibc only).

glibc serves allocations above its mmap threshold with their own mappings, returned when freed, but
it raises that threshold (up to 32 MB) each time such a block is freed; from then on arrays of a few
megabytes come from the heap and stay in the process's resident memory after they are freed. An
aggregation of 10^7 rows frees thousands of such arrays (per-bucket matrices, resample chunks), so
its resident memory would creep by hundreds of megabytes. Fixing the threshold keeps it where the
live arrays are. Elsewhere (musl, macOS) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # mallopt parameter number in glibc's malloc.h
THRESHOLD_BYTES = 1 << 20


def return_freed_arrays() -> bool:
    """Fix glibc's mmap threshold at 1 MiB; True when it took effect."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES))
    except (OSError, AttributeError):
        return False
