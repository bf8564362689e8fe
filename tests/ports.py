"""A loopback port that a test keeps while its server stops and starts again."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def lasting_port() -> int:
    """The bench's port for desk serve's restarts (bench/bench.py, free_port): free,
    and below the range the system hands out for port 0 and outgoing connections, which
    the tests running in parallel take their ports from."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import bench  # type: ignore[import-not-found]

    return int(bench.free_port())
