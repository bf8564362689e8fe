"""What the preview shows, shared by the thread that prepares and those that serve: the
pages of the last good preparation, the errors of the last one, each story page's
warnings, and the epoch the reload channel counts.

Enters: each preparation's outcome (desk.serve.server). Leaves: the pages a request is
served from, and what a reload channel compares.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from dataclasses import dataclass, field

from desk.content.findings import Finding
from desk.serve.demand import PagesOnDemand


@dataclass
class SiteState:
    """What the server shows: the pages, the epoch, the errors and warnings."""

    token_prefix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    epoch: int = 0
    # The pages of the last good preparation (None: none yet).
    pages: PagesOnDemand | None = None
    errors: tuple[Finding, ...] = ()
    # The warnings of each page's story file, by the page's URL path (the story pages').
    warnings: dict[str, tuple[Finding, ...]] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)
    closing: bool = False

    @property
    def token(self) -> str:
        """Changes with every preparation and every server start."""
        return f"{self.token_prefix}-{self.epoch}"

    def publish(self, pages: PagesOnDemand | None, errors: tuple[Finding, ...],
                warnings: dict[str, tuple[Finding, ...]] | None = None) -> None:
        """Record a preparation's outcome (`pages` None: it failed, the last good pages
        stay) and wake every waiting reload channel."""
        with self.changed:
            if pages is not None:
                self.pages = pages
                self.warnings = warnings or {}
            self.errors = errors
            self.epoch += 1
            self.changed.notify_all()

    def close(self) -> None:
        """Wake every reload channel to end."""
        with self.changed:
            self.closing = True
            self.changed.notify_all()

    def wait_for_change(self, token: str, timeout: float) -> str:
        """Block until the token differs from `token` (or timeout); return the current one."""
        with self.changed:
            self.changed.wait_for(lambda: self.token != token or self.closing, timeout)
            return self.token

    def next_epoch(self, since: int, timeout: float) -> int:
        """The epoch after `since`, waiting up to `timeout` for one (`since` when none)."""
        with self.changed:
            self.changed.wait_for(lambda: self.epoch != since or self.closing, timeout)
            return self.epoch

    def looks(self, relative: str, page: str) -> str:
        """A digest of what a page shows (`relative`: its file, `page`: its URL path):
        its bytes, its warnings and the errors; a reload channel tells the page to
        reload when it changes."""
        with self.changed:
            pages, errors, warnings = self.pages, self.errors, self.warnings.get(page, ())
        made = hashlib.sha256()
        try:
            body = pages.file(relative) if pages is not None else None
        except Exception as exc:  # noqa: BLE001 - a page that fails shows its error
            body = repr(exc).encode()
        made.update(body if body is not None else b"\0none")
        for finding in (*errors, "\0", *warnings):
            made.update(str(finding).encode() + b"\0")
        return made.hexdigest()


def warnings_by_file(findings: tuple[Finding, ...]) -> dict[str, tuple[Finding, ...]]:
    """The warnings, by the file they are about."""
    found: dict[str, list[Finding]] = {}
    for finding in findings:
        if not finding.is_error:
            found.setdefault(finding.path, []).append(finding)
    return {path: tuple(items) for path, items in found.items()}
