"""The preview's HTTP side: files of the site folder served with the reload script (and
the errors, a story's warnings) added to HTML pages as they are served, the reload
channel (Server-Sent Events), and request paths kept inside the folder.

Enters: a SiteState (desk.serve.shown). Leaves: HTTP responses; nothing is written.
"""

from __future__ import annotations

import html
import posixpath
import sys
from contextlib import AbstractContextManager, nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from desk import urls
from desk.content.findings import Finding
from desk.render.kinds import kind_of
from desk.serve.shown import PAGE_SUFFIXES, SiteState

EVENTS_PATH = "/__desk/events"
# How long a request waits for the first build, for a file it cannot make on demand.
START_WAIT = 900
IMMUTABLE = "max-age=31536000, immutable"
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
# By path within the site: the RSL licence file (desk.render.licence), at its one URL.
PATH_TYPES = {urls.LICENCE.lstrip("/"): "application/rsl+xml; charset=utf-8"}
# Served while no build has succeeded yet, with the overlay on top.
_NO_SITE = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>desk serve: build failed</title></head><body>"
            "<h1>The site could not be built</h1></body></html>")




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
    # A message is the token, then the pages it changed when known ("-": none): a page
    # not among them only takes the new token.
    parts.append(
        "<script>(function(){var t=" + f'"{state.token}"' + ";"
        f'var s=new EventSource("{EVENTS_PATH}");'
        's.onmessage=function(e){var p=e.data.split(" ");if(p[0]===t)return;'
        "if(p.length>1&&p.indexOf(location.pathname)<0){t=p[0];return;}"
        "s.close();location.reload();};})();</script>"
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
    decoded = _decoded(path)
    if decoded is None:
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


def _decoded(path: str) -> str | None:
    """A request's path decoded, or None when it tries to leave the folder."""
    decoded = unquote(path)
    if ("\\" in decoded or "\x00" in decoded or not decoded.startswith("/")
            or any(part in ("..", ".") for part in decoded.split("/"))):
        return None
    return decoded


def requested_file(raw_path: str) -> str | None:
    """The file of the site a request names, relative to the site (a folder's
    index.html), without looking at the folder; None for a path that tries to leave it."""
    decoded = _decoded(urlsplit(raw_path).path)
    if decoded is None:
        return None
    relative = decoded[1:]
    return relative + "index.html" if not relative or relative.endswith("/") else relative


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
        if not state.has_site and state.demand is not None:
            if self.respond_on_demand(head):
                return
            state.wait_for_start(timeout=START_WAIT)
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
        if found.suffix in PAGE_SUFFIXES:
            state.wait_until_current(found.relative_to(root).as_posix(), timeout=120)
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
        self.send_file(found.relative_to(root).as_posix(), body, head)

    def send_file(self, relative: str, body: bytes, head: bool) -> None:
        """A file of the site (its path relative to the site): an HTML page with the
        reload script (and the errors, the story's warnings) added."""
        path = PurePosixPath(relative)
        kind = PATH_TYPES.get(relative) or SPECIAL_TYPES.get(path.name) or CONTENT_TYPES.get(
            path.suffix, "application/octet-stream")
        if path.suffix == ".html":
            body = inject(body, reload_snippet(self.state, page_of(self.path)))
        # A content-hashed file never changes under its name: a reload need not fetch the
        # page's stylesheet and scripts again.
        kept = kind_of(relative) == "asset"
        self.send(200, kind, body, head, IMMUTABLE if kept else "no-store")

    def respond_on_demand(self, head: bool) -> bool:
        """Serve a file the first build will write, made on demand while it runs (see
        desk.serve.demand); False when it cannot be made."""
        relative, demand = requested_file(self.path), self.state.demand
        if relative is None or demand is None:
            return False
        try:
            body = demand(relative)
        except Exception:  # noqa: BLE001 - the build that runs says what went wrong
            return False
        if body is None:
            return False
        self.send_file(relative, body, head)
        return True

    def send(self, status: int, kind: str, body: bytes, head: bool,
             cache: str = "no-store") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
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
        epoch = -1
        try:
            self.wfile.write(b"retry: 300\n\n")
            while not state.closing:
                epoch, message = state.message(epoch, timeout=15)
                if message is not None:
                    self.wfile.write(f"data: {message}\n\n".encode())
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



class PreviewHTTPServer(ThreadingHTTPServer):
    """The preview's HTTP server: a browser tab closed mid-response is no error; another
    error is printed holding `gate` (a worker forked meanwhile would inherit the error
    stream's lock held: see Session.fork_gate)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler],
                 gate: AbstractContextManager[object] | None = None) -> None:
        super().__init__(address, handler)
        self._gate = gate or nullcontext()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a broken pipe, a reset
            return
        with self._gate:
            super().handle_error(request, client_address)


