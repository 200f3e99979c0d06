"""One process per run folder: a second ``pool.run`` on the same folder is refused, not interleaved.

An advisory ``flock`` on ``RUN_DIR/.lock``: the kernel drops it when the holder dies (even by
SIGKILL), so a crashed run never leaves a stale lock behind, and the holder's pid is written into
the file only to make the refusal message useful.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

LOCK_FILENAME = ".lock"


class RunLockedError(RuntimeError):
    """Another live process holds the run folder."""


class RunLock:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILENAME
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise RunLockedError(f"{self.path.parent}: in use by pid {holder}; wait for it to finish "
                                 "(or stop it) before resuming this run") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd = fd
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
