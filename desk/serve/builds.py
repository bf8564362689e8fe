"""The builds a preview's saves ask for, one after another in a thread of their own.

Enters: batches of saves (a reason, the content files changed). Leaves: calls of the
preview's build, the saves made meanwhile taken together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Builds:
    """The builds saves ask for, run one after another in a thread of their own: a save
    is shown ahead of its build (see DevServer.place_ahead) even while the last save's
    build runs, and the saves made meanwhile are built together next."""

    def __init__(self, run: Callable[[str, set[str] | None, bool], None]) -> None:
        self._run = run
        self._asked = threading.Condition()
        self._reasons: list[str] = []
        self._changed: set[str] | None = set()  # None: not known
        self._content_only = True
        self._closing = False
        self._running = False
        self._thread: threading.Thread | None = None

    def ask(self, reason: str, changed: set[str] | None, content_only: bool = True) -> None:
        """Ask for a build after a batch of saves (`changed`: the content files, None
        when not known; `content_only`: False when more than content changed)."""
        with self._asked:
            self._reasons.append(reason)
            self._changed = (None if changed is None or self._changed is None
                             else self._changed | changed)
            self._content_only = self._content_only and content_only
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="desk-builds")
                self._thread.start()
            self._asked.notify_all()

    def _loop(self) -> None:
        while True:
            with self._asked:
                self._asked.wait_for(lambda: bool(self._reasons) or self._closing)
                if self._closing:
                    return
                reasons, changed, content_only = (self._reasons, self._changed,
                                                  self._content_only)
                self._reasons, self._changed, self._running = [], set(), True
                self._content_only = True
            try:
                self._run(reasons[0] if len(reasons) == 1 else
                          f"{reasons[-1]} (and {len(reasons) - 1} saves before)", changed,
                          content_only)
            finally:
                with self._asked:
                    self._running = False
                    self._asked.notify_all()

    def settled(self, timeout: float) -> bool:
        """Wait until every build asked for has run (False: not within `timeout`)."""
        with self._asked:
            return self._asked.wait_for(lambda: not (self._reasons or self._running),
                                        timeout)

    def close(self) -> None:
        """Run no more builds (one that runs is left to end, or to die with the process)."""
        with self._asked:
            self._closing = True
            self._asked.notify_all()


