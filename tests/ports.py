"""A loopback port that a test keeps while its server stops and starts again."""

from __future__ import annotations

import random
import socket
from pathlib import Path

# Linux names the range bind(port 0) and outgoing connections take their ports from; the
# other systems' default range starts at 49152.
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def lasting_port() -> int:
    """A free loopback port below the ephemeral range. The tests run in parallel: a port
    let go between two starts of a server could be handed to another test's socket (a
    port 0 server, a client's connection) if it were in that range; a port below it is
    only ever taken by asking for it."""
    try:
        first = int(_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 49152
    low = 10_000 if first > 11_000 else 1024
    for _ in range(100):
        # Not the random module's: hypothesis seeds it, the same in every worker.
        port = random.SystemRandom().randrange(low, first)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another
            return port
    raise RuntimeError(f"no free loopback port between {low} and {first}")
