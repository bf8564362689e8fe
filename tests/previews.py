"""Previews (desk serve's DevServer) in a test's folder, and what they serve: every file
of the site, fetched over HTTP as a browser would, to compare with a build from nothing."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from storygen import REPO, make_story, write_story

from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.build.target import FreshStaging
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.content.history import UrlHistory
from desk.serve.server import DevServer

# What the server adds to an HTML page as it serves it (desk.serve.http.reload_snippet).
_ADDED = re.compile(rb'<aside id="desk-findings".*?</aside>|<div id="desk-errors".*?</div>'
                    rb"|<script>\(function\(\)\{var s=new EventSource.*?</script>", re.S)


def one_story_preview(root: Path, now: datetime,
                      say: Callable[[str], None] = lambda line: None) -> DevServer:
    """A preview of one story written to root/content, its site and cache in root;
    `say`: where its terminal lines go."""
    content = root / "content"
    write_story(content, make_story(1))

    def load(base_url: str) -> Config:
        return load_config(REPO / "pyproject.toml", {
            "content_dir": content, "base_url": base_url,
            "output_dir": root / "public", "cache_dir": root / "cache"})

    return DevServer(load, ("127.0.0.1", 0), now, False, say)


def fetch(url: str, method: str = "GET") -> tuple[int, bytes]:
    """A response's status and body (errors too)."""
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def served_site(dev: DevServer) -> dict[str, bytes]:
    """Every file of the site a running preview serves, by path: enumerated from its
    units, each fetched over HTTP, without what the server adds to HTML pages."""
    pages = dev.state.pages
    assert pages is not None, "the preview serves no site"
    found = {}
    for name in pages.files():
        status, body = fetch(f"{dev.base_url}/{urllib.parse.quote(name)}")
        assert status == 200, (name, status)
        found[name] = _ADDED.sub(b"", body) if name.endswith(".html") else body
    return found


def built_site(config: Config, now: datetime, out: Path, future: bool = False,
               history: UrlHistory | None = None) -> dict[str, bytes]:
    """Every file of a build from nothing with the drafts shown (as the preview shows
    them), by path."""
    clock = Clock(now, future, drafts=True)
    assert build(config.model_copy(update={"search": False}), clock, FreshStaging(out),
                 BuildCache(history=history)).ok
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and p.name != ".desk-site"}
