"""`desk serve`: the live preview for editors.

It runs the same build() as `desk build` (with the drafts shown, and starting from the
built site's URL history) into a private folder, serves that folder over HTTP, watches
content, templates, static files and the config, rebuilds on change and tells open pages
to reload over Server-Sent Events on the same host and port. A failed build keeps the
last good site on screen with the errors drawn over every page. The reload script and
the overlay are added to HTML responses as they are served, never to files a build
writes.
"""

from __future__ import annotations

import errno
import html
import posixpath
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import watchfiles

from desk.build.cache import BuildCache, Session, remembered_history
from desk.build.pipeline import BuildReport, build
from desk.build.state import SavedState
from desk.build.target import FreshStaging, InPlace, Target
from desk.build.writer import files_of, site_id_of
from desk.config import Config, ConfigError
from desk.content.catalog import Clock
from desk.content.findings import Finding
from desk.serve.folder import PreviewFolder

EVENTS_PATH = "/__desk/events"
# Rendered bytes held at most while the preview's start updates its folder in place.
START_SPILL = 64_000_000
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json; charset=utf-8",
    ".xml": "application/xml; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".pf_meta": "application/octet-stream",
}
SPECIAL_TYPES = {"feed.json": "application/feed+json; charset=utf-8"}
# Served while no build has succeeded yet, with the overlay on top.
_NO_SITE = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>desk serve: build failed</title></head><body>"
            "<h1>The site could not be built</h1></body></html>")


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

    @property
    def token(self) -> str:
        """Changes with every build and every server start, so pages know to reload."""
        return f"{self.token_prefix}-{self.epoch}"

    def publish(self, report: BuildReport | None, errors: tuple[Finding, ...],
                by_file: dict[str, tuple[Finding, ...]] | None = None) -> None:
        """Record a build's outcome (`by_file`: its warnings by file, when grouped
        already) and wake every waiting reload channel."""
        with self.changed:
            if report is not None and report.ok:
                self.has_site = True
                self.warnings = page_warnings(
                    report, warnings_by_file(report) if by_file is None else by_file)
            self.errors = errors
            self.epoch += 1
            self.changed.notify_all()

    def wait_for_change(self, token: str, timeout: float) -> str:
        """Block until the token differs from `token` (or timeout); return the current one."""
        with self.changed:
            self.changed.wait_for(lambda: self.token != token or self.closing, timeout)
            return self.token


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


def findings_panel(findings: tuple[Finding, ...]) -> str:
    """A small panel, dismissible, with the warnings of the story on the page."""
    items = "".join(f"<li>{html.escape(f.format())}</li>" for f in findings[:20])
    more = f"<li>… and {len(findings) - 20} more</li>" if len(findings) > 20 else ""
    count = len(findings)
    return (
        '<aside id="desk-findings" role="status" aria-label="desk: warnings" style="'
        "position:fixed;right:1em;bottom:1em;z-index:2147483646;max-width:min(40em,90vw);"
        "max-height:40vh;overflow:auto;background:#fff8e1;color:#3b2a00;"
        "font:13px/1.4 ui-monospace,monospace;padding:.75em 1em;border:2px solid #b7791f;"
        'border-radius:6px;box-shadow:0 2px 8px rgba(0,0,0,.25)">'
        '<button type="button" onclick="this.parentNode.remove()" '
        'style="float:right;margin-left:1em" aria-label="Dismiss">×</button>'
        f"<strong>desk: {count} warning{'s' if count != 1 else ''} in this story's file"
        f"</strong> (shown only in the preview)<ul>{items}{more}</ul></aside>"
    )


def reload_snippet(state: SiteState, page: str = "") -> str:
    """The script and, when the last build failed, the error overlay added to HTML pages;
    on a story's page (`page`: its URL path), the panel of its warnings."""
    parts = []
    warnings = state.warnings.get(page) if page else None
    if warnings:
        parts.append(findings_panel(warnings))
    if state.errors:
        items = "".join(f"<li>{html.escape(f.format())}</li>" for f in state.errors[:50])
        more = (f"<li>… and {len(state.errors) - 50} more</li>"
                if len(state.errors) > 50 else "")
        parts.append(
            '<div id="desk-errors" role="alert" style="position:fixed;inset:0 0 auto 0;'
            "z-index:2147483647;max-height:60vh;overflow:auto;background:#2b0b0b;color:#fff;"
            'font:14px/1.4 ui-monospace,monospace;padding:1em 1.5em;border-bottom:4px solid '
            '#e5484d"><strong>desk: the last save did not build; showing the last good '
            f"site.</strong><ul>{items}{more}</ul></div>"
        )
    parts.append(
        "<script>(function(){var t=" + f'"{state.token}"' + ";"
        f'var s=new EventSource("{EVENTS_PATH}");'
        "s.onmessage=function(e){if(e.data!==t){s.close();location.reload();}};})();</script>"
    )
    return "".join(parts)


def inject(page: bytes, snippet: str) -> bytes:
    """Put the snippet just before </body> (or at the end)."""
    marker = page.rfind(b"</body>")
    data = snippet.encode("utf-8")
    return page + data if marker < 0 else page[:marker] + data + page[marker:]


def resolve_request_path(root: Path, raw_path: str) -> tuple[int, Path | str | None]:
    """Map a request path to a file below root.

    Returns (200, file), (301, location) for a folder without its slash, (404, None), or
    (400, None) for paths that try to leave the folder.
    """
    path = urlsplit(raw_path).path
    decoded = unquote(path)
    if ("\\" in decoded or "\x00" in decoded or not decoded.startswith("/")
            or any(part in ("..", ".") for part in decoded.split("/"))):
        return 400, None
    normalised = posixpath.normpath(decoded)
    target = root / normalised.lstrip("/")
    try:
        if not target.resolve().is_relative_to(root.resolve()):
            return 404, None  # a symlink out of the site
    except OSError:
        return 404, None
    if target.is_dir():
        if not path.endswith("/"):
            return 301, path + "/"
        target = target / "index.html"
        if not target.resolve().is_relative_to(root.resolve()):
            return 404, None
    return (200, target) if target.is_file() else (404, None)


class Handler(BaseHTTPRequestHandler):
    """Serves the site folder of `state` (bound by make_handler), and the reload events."""

    state: SiteState
    server_version = "desk-serve"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # one line per rebuild is what editors want to see, not every request

    def do_HEAD(self) -> None:  # noqa: N802
        self.respond(head=True)

    def do_GET(self) -> None:  # noqa: N802
        if urlsplit(self.path).path == EVENTS_PATH:
            self.stream_events()
        else:
            self.respond(head=False)

    def respond(self, head: bool) -> None:
        state = self.state
        root = state.folder
        if not state.has_site:
            self.send(200 if state.errors else 503, CONTENT_TYPES[".html"],
                      inject(_NO_SITE.encode(), reload_snippet(state)), head)
            return
        status, found = resolve_request_path(root, self.path)
        if status == 301:
            self.send_response(301)
            self.send_header("Location", str(found))
            self.send_header("Content-Length", "0")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            return
        if status == 400:
            self.send(400, "text/plain; charset=utf-8", b"Bad request\n", head)
            return
        if status == 404 or not isinstance(found, Path):
            page = root / "404.html"
            body = page.read_bytes() if page.is_file() else b"Not found\n"
            self.send(404, CONTENT_TYPES[".html"], inject(body, reload_snippet(state)), head)
            return
        try:
            with state.files:
                body = found.read_bytes()
        except OSError:
            # The site was swapped between resolving and reading: try once more.
            with state.files:
                status, found = resolve_request_path(root, self.path)
                body = found.read_bytes() if isinstance(found, Path) else b""
            if not isinstance(found, Path):
                self.send(404, "text/plain; charset=utf-8", b"Not found\n", head)
                return
        kind = SPECIAL_TYPES.get(found.name) or CONTENT_TYPES.get(
            found.suffix, "application/octet-stream")
        if found.suffix == ".html":
            body = inject(body, reload_snippet(state, page_of(self.path)))
        self.send(200, kind, body, head)

    def send(self, status: int, kind: str, body: bytes, head: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def stream_events(self) -> None:
        state = self.state
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        token = ""
        try:
            self.wfile.write(b"retry: 300\n\n")
            while not state.closing:
                current = state.wait_for_change(token, timeout=15)
                if current != token:
                    self.wfile.write(f"data: {current}\n\n".encode())
                    token = current
                else:
                    self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return



def page_of(raw_path: str) -> str:
    """The URL path of the page a request asks for (its folder, for index.html)."""
    path = unquote(urlsplit(raw_path).path)
    return path.removesuffix("index.html") if path.endswith("/index.html") else path


def make_handler(state: SiteState) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to one server's state."""
    return type("BoundHandler", (Handler,), {"state": state})


class DevServer:
    """Builds, serves and rebuilds; `run()` blocks until stop() or Ctrl-C."""

    def __init__(
        self,
        load: Callable[[str], Config],
        address: tuple[str, int],
        now: datetime | None,
        future: bool,
        echo: Callable[[str], None],
        project_file: Path | None = None,
    ) -> None:
        host, port = address
        self._load = load
        self._project_file = project_file
        self._now = now
        self._future = future
        self._echo = echo
        # The warnings last printed, by file: each is printed once, when it changes.
        self._told: dict[str, tuple[Finding, ...]] | None = None
        self._folder = PreviewFolder(_cache_dir(load))
        self.state = SiteState(folder=self._folder.site)
        # What the last preview of the site left (its own cache, beside its site), and
        # the session kept in memory between rebuilds.
        self._session = Session()
        self._cache = (BuildCache.saved_for(self._folder.cache, self._folder.site)
                       if self._folder.shared else BuildCache())
        self._cache.session = self._session
        self._history_given = False
        self._stop = threading.Event()
        self._serving = False  # shutdown() waits for a serve loop: only one that started
        try:
            self.httpd = PreviewHTTPServer((host, port), make_handler(self.state))
        except OSError as exc:
            self._folder.close()
            if exc.errno == errno.EADDRINUSE:
                message = f"port {port} on {host} is in use; try --port {port + 1}"
                raise ServeError(message) from None
            raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        self.host, self.port = self.httpd.server_address[:2]
        shown = "localhost" if host in ("0.0.0.0", "::") else str(self.host)
        self.base_url = f"http://{shown}:{self.port}"

    def rebuild(self, reason: str, content_only: bool = False,
                jobs: int = 1) -> BuildReport | None:
        """Run the build once and publish its outcome.

        After a change to stories only, the site folder is updated in place (only the
        files that changed are written); any other change rebuilds into a new folder.
        `jobs` > 1 forks render workers: only before the server's threads start.
        """
        started = time.perf_counter()
        try:
            # No search index in the preview: it would cost seconds on every save.
            config = self._load(self.base_url).model_copy(update={"search": False})
        except ConfigError as exc:
            findings = tuple(Finding("pyproject.toml", "", "config", line)
                             for line in str(exc).splitlines())
            self.state.publish(None, findings)
            self._report(reason, None, findings, time.perf_counter() - started)
            return None
        problems = self._start_history(config)
        if problems:
            self.state.publish(None, problems)
            self._report(reason, None, problems, time.perf_counter() - started)
            return None
        now = self._now or datetime.now(UTC)
        folder = self.state.folder
        target = self._target(content_only)
        in_place = isinstance(target, InPlace)
        report = build(config, Clock(now, self._future, drafts=True), target, self._cache,
                       jobs)
        errors = report.errors if not report.ok else ()
        by_file = warnings_by_file(report) if report.ok else {}  # grouped once, for both
        self.state.publish(report, errors, by_file)
        if report.ok:
            self._tell_new_warnings(by_file)
        self._report(reason, report, errors, time.perf_counter() - started)
        if report.ok and not in_place:
            # A new folder: listed once the reload is sent, so the next save (written in
            # place) does not wait for it.
            self._session.present = files_of(folder)
        return report

    def _target(self, content_only: bool) -> Target:
        """Where a build goes: after a save to stories only, into the served folder where
        it stands; at the start, there too when the last preview's state describes that
        folder (only what differs is written, nothing is linked again; the files of the
        site are taken from the state, not from a walk of the folder); else into a new
        folder swapped in whole."""
        folder, state = self.state.folder, self._cache.state
        if content_only and self.state.has_site:
            return InPlace(folder, self.state.files, self._session.present)
        if not self.state.has_site and state.describes(site_id_of(folder)):
            self._session.present = state_files(state)
            # Nothing is served before this build succeeds: it may write as it goes.
            return InPlace(folder, self.state.files, self._session.present, spill=START_SPILL)
        return FreshStaging(folder, self._remove_later)

    def _start_history(self, config: Config) -> tuple[Finding, ...]:
        """Before the first build: start from the URL history the next `desk build` would
        start from, so the preview redirects and gives notice where the site will (not
        from the one the last preview saved: builds may have published since)."""
        if self._history_given:
            return ()  # the preview's own, from its last build
        history, problems = remembered_history(config.cache_dir, config.output_dir)
        if not problems:
            self._cache.state.history = history
            self._history_given = True
        return tuple(problems)

    def _remove_later(self, old_site: Path) -> None:
        """Delete a replaced site after the reload is sent, away from the build's names."""
        self._folder.throw_away_later(old_site)

    def _report(self, reason: str, report: BuildReport | None,
                errors: tuple[Finding, ...], seconds: float) -> None:
        for finding in errors:
            self._echo(finding.format())
        if report is not None and report.ok:
            count = len(report.published)
            self._echo(f"{reason}: built {count} {'story' if count == 1 else 'stories'}, "
                       f"{len(report.warnings)} warning(s) in {seconds:.2f} s")
        else:
            self._echo(f"{reason}: build failed with {len(errors)} error(s) in {seconds:.2f} s;"
                       " still serving the last good site")

    def _tell_new_warnings(self, by_file: dict[str, tuple[Finding, ...]]) -> None:
        """Print the warnings of each file whose warnings changed since they were last
        printed (at the start only their count: an archive may hold thousands)."""
        told, self._told = self._told, by_file
        if told is None:
            return
        for path, found in by_file.items():
            if told.get(path) != found:
                for finding in found:
                    self._echo(f"warning: {finding.format()}")

    def watch_paths(self) -> list[Path]:
        """Folders and files whose changes trigger a rebuild."""
        config = self._load(self.base_url)
        paths = [config.content_dir, config.templates_dir, config.static_dir]
        if self._project_file is not None:
            paths.append(self._project_file)
        return [p for p in paths if p.exists()]

    def watch(self, ready: Callable[[], None] | None = None) -> None:
        """Rebuild on every batch of changes until stopped; `ready()` once watching."""
        try:
            paths = self.watch_paths()
        except ConfigError:
            paths = [self._project_file] if self._project_file else []
        try:
            shown_as: Path | None = self._load(self.base_url).content_dir
        except ConfigError:
            shown_as = None
        content = shown_as.resolve() if shown_as is not None else None
        # Timeouts yield empty batches: the first one says the watcher is in place.
        for changes in watchfiles.watch(*paths, debounce=400, step=30, stop_event=self._stop,
                                        raise_interrupt=False, rust_timeout=500,
                                        yield_on_timeout=True):
            if ready is not None:
                ready()
                ready = None
            if not changes:
                continue
            names = sorted({_shorten(path) for _, path in changes})
            reason = "changed " + ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
            content_only = content is not None and all(
                Path(path).resolve().is_relative_to(content) for _, path in changes)
            # After a save to stories only, the other story files need no look.
            self._session.changed = (
                content_paths([path for _, path in changes], content, shown_as)
                if content_only and content is not None and shown_as is not None else None)
            try:
                self.rebuild(reason, content_only)
            except Exception as exc:  # noqa: BLE001 - nothing an editor saves may stop the server
                finding = Finding("desk", "", "internal", f"build crashed: {exc!r}")
                self.state.publish(None, (finding,))
                self._echo(finding.format())

    def start(self) -> threading.Thread:
        """Serve in a background thread (the watcher runs in the caller's)."""
        thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                  name="desk-http")
        thread.start()
        self._serving = True
        return thread

    def stop(self) -> None:
        """Stop watching and serving; remove the private folder."""
        self._stop.set()
        with self.state.changed:
            self.state.closing = True
            self.state.changed.notify_all()
        if self._serving:
            self.httpd.shutdown()
        self.httpd.server_close()
        # The folder stays for the next preview of the site, which clears it: stopping
        # is as quick at 100,000 stories as at ten.
        self._folder.close()


class ServeError(Exception):
    """The server cannot start."""


class PreviewHTTPServer(ThreadingHTTPServer):
    """The preview's HTTP server: a browser tab closed mid-response is no error."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a broken pipe, a reset
            return
        super().handle_error(request, client_address)


def state_files(state: SavedState) -> set[str]:
    """Every file of the site a saved state describes: its units' and the loose ones."""
    found = set(state.loose)
    for record in state.units.values():
        found.update(record.files)
    return found


def _cache_dir(load: Callable[[str], Config]) -> Path | None:
    """The site's cache folder, where its preview folder lives (None: unreadable now)."""
    try:
        return load("http://127.0.0.1").cache_dir
    except ConfigError:
        return None


def content_paths(changed: list[str], content: Path, shown_as: Path) -> set[str]:
    """The changed files as the content walk names them (below `shown_as`, the content
    folder as configured, whose real path is `content`), and as the watcher did."""
    named = set(changed)
    for path in changed:
        real = Path(path).resolve()
        if real.is_relative_to(content):
            named.add(str(shown_as / real.relative_to(content)))
    return named


def _shorten(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path

