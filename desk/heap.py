"""How a build keeps Python's cyclic garbage collector off the objects it holds.

A build makes no reference cycles worth collecting (reference counting frees what it
drops), while the collector's scans of the tens of thousands of objects a large site
keeps alive cost up to a third of a rebuild, and as much again as reading the saved state.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile (as it was afterwards)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Every object made so far is left out of cyclic garbage collection meanwhile (still
    freed when no longer referenced); a process that goes on afterwards gets them back."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
