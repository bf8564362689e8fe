"""How desk keeps its process's heap lean: the cyclic garbage collector paused while a
build holds its objects, and the C allocator giving large blocks back when they are freed.

A build makes no reference cycles worth collecting (reference counting frees what it
drops), while the collector's scans of the objects a large site keeps alive cost a third
of reading the index at 100,000 stories (bench/RESULTS.md).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
from collections.abc import Iterator

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
