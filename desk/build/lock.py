"""One writer at a time: an operating-system lock on a site's output folder and on its
build cache, held from before the cache is read until after it is saved.

The lock is a file lock (flock) on a small file beside what it guards: `.NAME.desk-lock`
beside the output folder NAME, and `STATE.lock` beside the saved state in the cache
folder. The kernel drops it when its process ends however it ends, so a killed build
never leaves a stale lock behind, and the files themselves are never removed (removing
a lock file while another process waits on it would let two writers in). The holder
writes what it is and its process id into the file, for the one who waits.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from desk.build.writer import staging_prefix

# How a waiting process on a system without flock polls its lock.
_POLL_SECONDS = 0.1


class LockBusy(Exception):
    """Another process holds the lock and the caller would not wait."""

    def __init__(self, holder: str, guarded: Path) -> None:
        super().__init__(f"{guarded} is being written by {holder}")
        self.holder = holder
        self.guarded = guarded


def site_lock_file(out_dir: Path) -> Path:
    """The lock file of an output folder (hidden, beside it)."""
    return out_dir.parent / (staging_prefix(out_dir) + "lock")


def cache_lock_file(state_file: Path) -> Path:
    """The lock file of a saved state (beside it in the cache folder)."""
    return state_file.with_name(state_file.name + ".lock")


def guarded_by(out_dir: Path, state_file: Path | None) -> list[tuple[Path, Path]]:
    """The locks a build of `out_dir` holds (lock file, what it guards): the output
    folder's, then its saved state's, if any. Always in that order, so two processes
    never each hold one the other waits for."""
    locks = [(site_lock_file(out_dir), out_dir)]
    if state_file is not None:
        locks.append((cache_lock_file(state_file), state_file))
    return locks


@contextlib.contextmanager
def writing(guarded: Sequence[tuple[Path, Path]], role: str, wait: bool = True,
            told: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the lock of each (lock file, what it guards) in turn, in the order given.

    `role` names the holder for the others ("build", "deploy"); with `wait` False a held
    lock raises LockBusy at once, else `told` hears once which process is waited for.
    """
    with contextlib.ExitStack() as stack:
        for lock_file, what in guarded:
            stack.enter_context(_held(lock_file, what, role, wait, told))
        yield


@contextlib.contextmanager
def _held(lock_file: Path, guarded: Path, role: str, wait: bool,
          told: Callable[[str], None] | None) -> Iterator[None]:
    fd = _open(lock_file)
    if fd is None:  # no file can be made beside it, so no build can stage a site there
        yield
        return
    try:
        if not _try_lock(fd):
            holder = _holder(fd)
            if not wait:
                raise LockBusy(holder, guarded)
            if told is not None:
                told(f"waiting for {holder} on {guarded} …")
            _lock(fd)
        _write_holder(fd, f"{role} {os.getpid()}\n")
        try:
            yield
        finally:
            _write_holder(fd, "")  # the next holder writes its own name
    finally:
        os.close(fd)  # and the lock goes with it (a process that waited in vain held none)


def _write_holder(fd: int, text: str) -> None:
    """Say who holds the lock, in its file (only while holding it)."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, text.encode("ascii"))


def _open(lock_file: Path) -> int | None:
    """The lock file, opened for locking (None: it cannot be made here)."""
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        return os.open(lock_file, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        return None


def _holder(fd: int) -> str:
    """Who holds the lock, as its file says ("the build of PID 1234")."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        role, _, pid = os.read(fd, 100).decode("ascii", "replace").strip().partition(" ")
    except OSError:
        role, pid = "", ""
    if not role or not pid.isdigit():
        return "another process"  # it has the lock but has not written its name yet
    return f"the {role} of PID {pid}"


if sys.platform != "win32":
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

else:  # pragma: no cover - Windows locks the first byte instead
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _lock(fd: int) -> None:
        while not _try_lock(fd):
            time.sleep(_POLL_SECONDS)
