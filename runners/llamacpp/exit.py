"""Why a managed llama.cpp server stopped, said so a person can act on it.

A server that dies mid-run otherwise shows up only as connection errors on every request. The
usual cause on virtual machines is a llama.cpp built with ``-march=native`` for a CPU that lists
instructions it then traps on (AMX has been seen): the server dies on its first prompt with
SIGILL, or with SIGSEGV / SIGBUS and a ``general protection`` or ``invalid opcode`` line naming
``libggml-cpu.so`` in the kernel log. The fix is a build for the instruction sets the CPU really
runs, which ``scripts/install.sh --rebuild-llama`` makes.
"""

from __future__ import annotations

import signal
import subprocess

REBUILD_COMMAND = "scripts/install.sh --rebuild-llama"
# Signals a broken build (or a broken CPU feature) ends a process with.
CRASH_SIGNALS = frozenset({signal.SIGILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE})
_KERNEL_MARKS = ("libggml", "libllama")


def describe_exit(returncode: int) -> str:
    """``killed by SIGSEGV (signal 11)`` or ``exited with code 1``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
            return f"killed by {name}"
        return f"killed by {name} (signal {-returncode})"
    return f"exited with code {returncode}"


def kernel_lines(marks: tuple[str, ...] = _KERNEL_MARKS, limit: int = 3) -> list[str]:
    """The kernel log's last lines that name llama.cpp's libraries (empty when it cannot be read,
    e.g. without the right to read it)."""
    try:
        shown = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if shown.returncode != 0:
        return []
    lines = [line.strip() for line in shown.stdout.splitlines() if any(m in line for m in marks)]
    return lines[-limit:]


def crash_advice(returncode: int | None) -> str:
    """What to do about an exit: the rebuild command for a crash of llama.cpp's CPU code, else ''."""
    if returncode is None or returncode >= 0:
        return ""
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return ""
    if sig not in CRASH_SIGNALS:
        return ""
    kernel = kernel_lines()
    if sig == signal.SIGILL or kernel:
        seen = f" The kernel log says: {' | '.join(kernel)}." if kernel else ""
        return (
            f"llama.cpp was built for instructions this CPU traps on (a -march=native build).{seen} "
            f"Rebuild it for this CPU: {REBUILD_COMMAND}"
        )
    return (
        f"if `dmesg` shows 'invalid opcode' or 'general protection' in libggml-cpu.so, llama.cpp was built "
        f"for instructions this CPU traps on: rebuild it with {REBUILD_COMMAND}"
    )
