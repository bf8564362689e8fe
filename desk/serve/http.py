"""The preview's HTTP side: each file of the site made on demand (desk.serve.demand),
served with the reload script (and the errors, a story's warnings) added to HTML pages,
the reload channel (Server-Sent Events), and request paths kept inside the site.

Enters: a SiteState (desk.serve.shown). Leaves: HTTP responses; nothing is written.
"""

from __future__ import annotations

import html
import sys
from contextlib import AbstractContextManager, nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from desk.build.pipeline import describe_failure
from desk.content.findings import Finding
from desk.deploy.headers import content_type
from desk.render.kinds import kind_of
from desk.serve.shown import SiteState

EVENTS_PATH = "/__desk/events"
IMMUTABLE = "max-age=31536000, immutable"
HTML = content_type("index.html")
TEXT = content_type("a.txt")
# Served while no preparation has succeeded yet, with the overlay on top.
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
    # The channel knows the page and the epoch it was served at, and sends a message
    # only when what the page shows changed.
    parts.append(
        "<script>(function(){var s=new EventSource(" + f'"{EVENTS_PATH}?t={state.token}'
        + '&p="+encodeURIComponent(location.pathname));'
        "s.onmessage=function(){s.close();location.reload();};})();</script>"
    )
    return "".join(parts)


def inject(page: bytes, snippet: str) -> bytes:
    """Put the snippet just before </body> (or at the end)."""
    marker = page.rfind(b"</body>")
    data = snippet.encode("utf-8")
    return page + data if marker < 0 else page[:marker] + data + page[marker:]


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
        pages = state.pages
        if pages is None:
            self.send(200 if state.errors else 503, HTML,
                      inject(_NO_SITE.encode(), reload_snippet(state)), head)
            return
        relative = requested_file(self.path)
        if relative is None:
            self.send(400, TEXT, b"Bad request\n", head)
            return
        try:
            body = pages.file(relative)
            folder = (body is None and not relative.endswith("index.html")
                      and pages.file(relative + "/index.html") is not None)
        except Exception as exc:  # noqa: BLE001 - a page that cannot be made says why
            self.send_failure(exc, head)
            return
        if folder:
            self.send_response(301)
            self.send_header("Location", urlsplit(self.path).path + "/")
            self.send_header("Content-Length", "0")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            return
        if body is None:
            found = pages.file("404.html")
            self.send(404, HTML, inject(found or b"Not found\n", reload_snippet(state)), head)
            return
        self.send_file(relative, body, head)

    def send_file(self, relative: str, body: bytes, head: bool) -> None:
        """A file of the site (its path relative to the site): an HTML page with the
        reload script (and the errors, the story's warnings) added."""
        if relative.endswith(".html"):
            body = inject(body, reload_snippet(self.state, page_of(self.path)))
        # A content-hashed file never changes under its name: a reload need not fetch the
        # page's stylesheet and scripts again.
        kept = kind_of(relative) == "asset"
        self.send(200, content_type(relative), body, head, IMMUTABLE if kept else "no-store")

    def send_failure(self, exc: Exception, head: bool) -> None:
        """A page that could not be made: what went wrong, over the last good site's
        overlay (a broken template, a file changed while it was read)."""
        config = self.state.pages.ctx.config if self.state.pages is not None else None
        finding = (describe_failure(exc, config.templates_dir) if config is not None
                   else None) or Finding("desk", "", "internal", f"cannot render: {exc!r}")
        panel = (f'<div id="desk-errors" role="alert"><strong>desk: this page cannot be '
                 f"made</strong><ul><li>{html.escape(finding.format())}</li></ul></div>")
        self.send(500, HTML, inject(_NO_SITE.encode(), panel + reload_snippet(self.state)),
                  head)

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
        """Tell the page (named in the query, with the token it was served at) to reload
        when what it shows changed: its bytes, its warnings, the errors."""
        state = self.state
        query = parse_qs(urlsplit(self.path).query)
        page = query.get("p", ["/"])[0]
        relative = requested_file(page)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        epoch = state.epoch
        # Served at another epoch: what it showed is not known, so it reloads.
        seen = (state.looks(relative, page) if relative is not None
                and query.get("t", [""])[0] == state.token else None)
        try:
            self.wfile.write(b"retry: 300\n\n")
            while not state.closing:
                if seen is None:
                    self.wfile.write(b"data: reload\n\n")
                    self.wfile.flush()
                    return
                now = state.next_epoch(epoch, timeout=15)
                if now == epoch:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    continue
                epoch = now
                if relative is None or state.looks(relative, page) != seen:
                    seen = None
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


