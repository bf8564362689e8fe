"""How desk keeps its process's heap lean: the cyclic garbage collector off the objects
a build holds, and the C allocator giving large blocks back when they are freed.

A build makes no reference cycles worth collecting (reference counting frees what it
drops), while the collector's scans of the tens of thousands of objects a large site
keeps alive cost up to a third of a rebuild, and as much again as reading the saved state.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import os
import sys
from collections.abc import Iterator
from typing import NoReturn

# glibc's mallopt parameter for the size from which a block is mapped on its own.
_M_MMAP_THRESHOLD = -3
# Its default: blocks from 128 KiB are mapped on their own, and unmapped when freed.
_LARGE_BLOCK = 128 * 1024


def large_blocks_returned() -> bool:
    """Have the C allocator give every large block (a table of an archive-sized dict or
    set, a page's bytes) back to the system when it is freed, as it does at first.

    glibc raises that threshold each time it frees such a block, so later ones come from
    its heap and stay resident once freed: a build that makes and drops archive-sized
    tables stage after stage grows by tens of MB it no longer uses (at 100,000 stories an
    hourly build peaked at about 340 MB instead of 290). Setting the threshold keeps it
    fixed. Without glibc's mallopt (another C library, another system): nothing to do.
    True when the threshold was set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _LARGE_BLOCK))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile (as it was afterwards). Not for what may
    hold garbage cycles in a process that goes on (desk serve's builds): only a full
    collection frees those."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def left_alone_at_exit() -> None:
    """Have the collection the interpreter runs on its way out leave every object alone:
    a process that ends frees its memory at once, and that last scan of a build's
    objects took a quarter of a second at 100,000 stories. Asked any number of times,
    done once."""
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Every object made so far is left out of cyclic garbage collection meanwhile (still
    freed when no longer referenced); a process that goes on afterwards gets them back."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


class Outliving:
    """What a command made, held until its process ends, which then ends without
    freeing it object by object: the system takes a process's memory back at once, and
    freeing the million objects a build holds at 100,000 stories took a tenth of a
    second after its work was done. Only the desk program holds one (desk.cli.run); a
    command run in a longer-lived process (a test's) frees what it made as usual."""

    def __init__(self) -> None:
        self._held: list[object] = []

    def hold(self, *made: object) -> None:
        """Keep these until the process ends."""
        self._held.extend(made)

    @property
    def holds(self) -> bool:
        """Whether anything is held."""
        return bool(self._held)

    def end(self, status: int) -> NoReturn:
        """End the process with this exit status, its output flushed and nothing freed
        (no exit handler runs: any a command needs has run by then)."""
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the process was started with it closed
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
        os._exit(status)
