"""What the preview shows, shared by the threads that build and those that serve: the
site folder, the build epoch, the errors and warnings, the pages placed ahead of a build
or waiting for a resumed preview's first build, and what each reload event says.

Enters: each build's report (desk.build.pipeline) and the pages placed ahead. Leaves: the
token and messages of the reload channel, and whether a request must wait for a build.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.build.pipeline import BuildReport
from desk.content.findings import Finding


@dataclass
class SiteState:
    """What the server shows: the site folder, the build epoch and the current errors."""

    folder: Path
    token_prefix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    epoch: int = 0
    has_site: bool = False
    errors: tuple[Finding, ...] = ()
    # The warnings of each page's story file, by the page's URL path (the story pages').
    warnings: dict[str, tuple[Finding, ...]] = field(default_factory=dict)
    changed: threading.Condition = field(default_factory=threading.Condition)
    closing: bool = False
    # Held while a request reads a file and while an in-place rebuild writes files.
    files: threading.Lock = field(default_factory=threading.Lock)
    # While a build follows pages placed ahead of it (desk.build.ahead): the files placed,
    # which alone are served before it ends (every other page may be about to change).
    ahead: frozenset[str] | None = None
    # While a resumed preview's first build runs (see desk.serve.resume): only HTML pages
    # and assets are served before it ends (no clock changes them).
    warming: bool = False
    # The pages (URL paths) each recent epoch changed (None: any page may have).
    paths: dict[int, tuple[str, ...] | None] = field(default_factory=dict)
    # While the first build runs, served before it ends: the files it will write, made
    # on demand (desk.serve.demand; a file it cannot make, None, waits for the build).
    demand: Callable[[str], bytes | None] | None = None

    @property
    def token(self) -> str:
        """Changes with every build and every server start, so pages know to reload."""
        return f"{self.token_prefix}-{self.epoch}"

    def publish(self, report: BuildReport | None, errors: tuple[Finding, ...],
                by_file: dict[str, tuple[Finding, ...]] | None = None,
                pages: tuple[str, ...] | None = None, keep_ahead: bool = False) -> None:
        """Record a build's outcome (`by_file`: its warnings by file, when grouped
        already; `pages`: the URL paths of the pages it changed, when known;
        `keep_ahead`: pages were placed ahead while it ran, so they still wait for the
        next) and wake every waiting reload channel and request."""
        with self.changed:
            if report is not None and report.ok:
                self.has_site = True
                warnings = page_warnings(
                    report, warnings_by_file(report) if by_file is None else by_file)
                if pages is not None:  # a page whose panel changes changes too
                    pages = (*pages, *changed_keys(self.warnings, warnings))
                self.warnings = warnings
            if errors or self.errors:
                pages = None  # the overlay is on every page
            self.errors = errors
            self.warming, self.demand = False, None
            if not keep_ahead:
                self.ahead = None
            self._advance(pages)

    def start(self, demand: Callable[[str], bytes | None]) -> None:
        """Serve while the first build runs, each file it will write made on demand."""
        with self.changed:
            self.demand = demand

    def wait_for_start(self, timeout: float) -> None:
        """Wait for the first build to end (a file it will write that cannot be made on
        demand)."""
        with self.changed:
            self.changed.wait_for(lambda: self.demand is None or self.closing, timeout)

    def resume(self) -> None:
        """Serve the site the last preview left, as it is, while its first build runs."""
        with self.changed:
            self.has_site = self.warming = True
            self._advance(None)

    def place_ahead(self, files: tuple[str, ...], pages: tuple[str, ...],
                    warnings: dict[str, tuple[Finding, ...]]) -> None:
        """Record pages placed ahead of a build (`files`; `pages`, their URL paths, with
        their files' warnings) until the build publishes."""
        with self.changed:
            self.ahead = (self.ahead or frozenset()) | frozenset(files)
            self.warnings = {**self.warnings, **warnings}
            self._advance(pages)

    def _advance(self, pages: tuple[str, ...] | None) -> None:
        self.epoch += 1
        self.paths[self.epoch] = pages
        self.paths.pop(self.epoch - _EPOCHS_KEPT, None)
        self.changed.notify_all()

    def wait_for_change(self, token: str, timeout: float) -> str:
        """Block until the token differs from `token` (or timeout); return the current one."""
        with self.changed:
            self.changed.wait_for(lambda: self.token != token or self.closing, timeout)
            return self.token

    def message(self, since: int, timeout: float) -> tuple[int, str | None]:
        """The epoch after `since` (waiting up to `timeout` for one), and what the reload
        channel sends of it: the token, then the pages changed since `since` when known
        (None: nothing new)."""
        with self.changed:
            self.changed.wait_for(lambda: self.epoch != since or self.closing, timeout)
            epoch = self.epoch
            if epoch == since:
                return since, None
            changed = ([self.paths.get(e) for e in range(since + 1, epoch + 1)]
                       if since >= 0 else [None])
            if any(pages is None for pages in changed):
                return epoch, self.token
            shown = sorted({page for pages in changed for page in pages or ()})
            return epoch, " ".join([self.token, *shown] if shown else [self.token, "-"])

    def wait_until_current(self, relative: str, timeout: float) -> None:
        """Wait for the build that runs before serving a page it may change: any page
        but those placed ahead of it, or while a resumed preview's first build runs,
        any page but HTML ones (assets never change in such builds)."""
        with self.changed:
            if (self.ahead is None or relative in self.ahead) and not (
                    self.warming and not relative.endswith(".html")):
                return
            self.changed.wait_for(lambda: (self.ahead is None and not self.warming)
                                  or self.closing, timeout)


# Epochs whose changed pages are remembered, for channels a few behind.
_EPOCHS_KEPT = 16
# What a build that follows pages placed ahead may change: pages, not assets.
PAGE_SUFFIXES = frozenset({".html", ".json", ".md", ".xml", ".txt"})


def changed_keys(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, ...]:
    """The keys whose values differ between two mappings (added and removed too)."""
    return tuple(k for k in {*old, *new} if old.get(k) != new.get(k))


def warnings_by_file(report: BuildReport) -> dict[str, tuple[Finding, ...]]:
    """The warnings of the build, by the file they are about."""
    found: dict[str, list[Finding]] = {}
    for finding in report.warnings:
        found.setdefault(finding.path, []).append(finding)
    return {path: tuple(findings) for path, findings in found.items()}


def page_warnings(report: BuildReport, by_file: dict[str, tuple[Finding, ...]]
                  ) -> dict[str, tuple[Finding, ...]]:
    """The warnings `by_file`, by the URL path of the page of the story they are about."""
    if not by_file:
        return {}
    return {item.url_path: by_file[item.path]
            for item in (*report.published, *report.skipped) if item.path in by_file}

