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


class RunFolderError(RuntimeError):
    """The run folder cannot be used: it cannot be created or written, or another process holds it."""


class RunLockedError(RunFolderError):
    """Another live process holds the run folder."""


def unwritable_run_folder(run_dir: Path, exc: OSError) -> RunFolderError:
    return RunFolderError(
        f"{run_dir}: cannot create or write the run folder ({exc.strerror or exc}); "
        "pass a folder this user can write to"
    )


class RunLock:
    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_FILENAME
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only disk, no permission, a file where a folder should be
            raise unwritable_run_folder(self.path.parent, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "another process"
            os.close(fd)
            raise RunLockedError(
                f"{self.path.parent}: in use by pid {holder}; wait for it to finish "
                "(or stop it) before resuming this run"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode("ascii"))
        self._fd = fd
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
