"""A preview's first build shows a page as soon as its catalog is made: each file a
browser asks for is made on demand with that build's render context, byte for byte the
file the build then writes (lists that show a story included)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import NOW as CLI_NOW
from conftest import child_pids, read_until, tree
from storygen import REPO, make_corpus, make_story, write_story
from test_serve import NOW

from desk.build.cache import BuildCache, Session
from desk.build.pipeline import build
from desk.build.target import FreshStaging
from desk.config import load_config
from desk.content.catalog import Clock
from desk.serve.demand import PagesOnDemand
from desk.serve.folder import PREVIEW


def test_every_page_made_on_demand_is_the_page_the_build_writes(tmp_path: Path) -> None:
    content = tmp_path / "content"
    stories = make_corpus(content, 14)
    # A draft (the preview shows drafts) and a moved story (a redirect at its old path).
    write_story(content / "drafts", make_story(30, headline="A draft in the preview"))
    config = load_config(REPO / "pyproject.toml", {
        "content_dir": content, "base_url": "http://127.0.0.1:8123", "cache_dir": tmp_path / "c",
        "output_dir": tmp_path / "out"}).model_copy(update={"search": False})
    clock = Clock(NOW, drafts=True)
    assert build(config, clock, FreshStaging(tmp_path / "first"), BuildCache()).ok
    write_story(content, {**stories[2], "slug": "moved-elsewhere"},
                name=f"{stories[2]['slug']}.json")
    cache = BuildCache(session=Session())
    first = tree(tmp_path / "first")
    assert build(config, clock, FreshStaging(tmp_path / "site"), cache).ok
    assert cache.session is not None and cache.session.rendered is not None
    built = tree(tmp_path / "site")
    assert built != first

    # The front page first, as a browser asks (its cards' digests made as it asks), then
    # every file of the site.
    pages = PagesOnDemand(cache.session.rendered)
    assert pages.file("index.html") == built["index.html"]
    made = {name: pages.file(name) for name in built}
    wrong = [name for name, data in made.items() if data is not None and data != built[name]]
    assert wrong == []
    pages_files = [name for name in built if name.rsplit("/", 1)[-1].startswith("index.")]
    assert len(pages_files) > 60
    assert [name for name in pages_files if made[name] is None] == []
    # Assets, feeds in their first format and sitemaps too; a redirect's page.
    for name in ("feed.xml", "sitemap.xml", "robots.txt", "llms.txt"):
        assert made[name] == built[name], name
    assert any(name.startswith("static/") and made[name] for name in built)
    assert b"A draft in the preview" in built["index.html"]
    assert pages.file("no/such/page/index.html") is None


def test_a_preview_with_nothing_known_serves_before_its_first_build_ends(
        tmp_path: Path) -> None:
    """With nothing known, `desk serve` serves once its first build has made its
    catalog, before it renders: the line saying so comes before that build's report, and
    the pages asked for at once (made on demand, or by then written) are the files the
    build writes, stylesheet included. A real process."""
    with _cold_preview(tmp_path, 300) as (process, lines, base, stories):
        story = f"/stories/{stories[7]['published_at'][:10]}/{stories[7]['slug']}/"
        early = {path: urllib.request.urlopen(base + path, timeout=120).read()
                 for path in ("/", story)}
        sheet = re.search(rb'href="(/static/[^"]+\.css)"', early["/"])
        assert sheet is not None
        assert urllib.request.urlopen(base + sheet[1].decode(), timeout=120).status == 200
        read_until(process.stderr, lines, "start: ")
        assert lines[-1].startswith("start: built 301 stories"), lines  # and the sample
        assert not any(line.startswith("start: ") for line in lines[:-1]), lines
        site = tmp_path / "site" / ".desk-cache" / PREVIEW / "site"
        for path, body in early.items():
            assert re.sub(rb"<script>\(function\(\)\{var t=.*?</script>", b"", body) == (
                site / path.lstrip("/") / "index.html").read_bytes(), path


def test_a_preview_serving_its_start_still_renders_with_forked_workers(
        tmp_path: Path) -> None:
    """Its server's threads leave alone what a worker uses while one is forked (a page
    made on demand and the fork take one gate), so the start's build goes on rendering
    with every core once it serves: forked copies of desk serve (the same command line)
    run after its `Serving` line, before its first build's report. A real process."""
    with _cold_preview(tmp_path, 400) as (process, lines, base, stories):
        command = Path(f"/proc/{process.pid}/cmdline").read_bytes()
        built = threading.Event()
        reader = threading.Thread(target=lambda: (read_until(process.stderr, lines, "start: "),
                                                  built.set()), daemon=True)
        reader.start()
        story = f"/stories/{stories[9]['published_at'][:10]}/{stories[9]['slug']}/"
        # A page made on demand, asked for while workers are forked.
        asked = threading.Thread(target=lambda: urllib.request.urlopen(base + story,
                                                                       timeout=120).read())
        asked.start()
        forked: set[int] = set()
        while not forked and not built.wait(0.002):
            forked = {pid for pid in child_pids(process.pid) if _command_of(pid) == command}
        asked.join(timeout=120)
        assert built.wait(timeout=120), lines
        assert forked, "no worker forked once it served"
        assert lines[-1].startswith("start: built 401 stories"), lines  # and the sample


@contextmanager
def _cold_preview(tmp_path: Path, count: int) -> Iterator[
        tuple[subprocess.Popen[str], list[str], str, list[dict[str, Any]]]]:
    """A real `desk serve` of a new site of `count` stories (and the sample), nothing
    known, read up to its `Serving` line: the process, its lines so far, its address and
    the stories. Stopped on the way out."""
    root = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "desk", "init", str(root), "--base-url",
                    "https://news.example.org", "-q"], check=True)
    stories = make_corpus(root / "content", count)
    process = subprocess.Popen([sys.executable, "-m", "desk", "serve", "--port", "0",
                                "--now", CLI_NOW], cwd=root, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        lines = read_until(process.stderr, [], "Serving ")
        yield process, lines, lines[-1].split()[1].rstrip("/"), stories
    finally:
        process.terminate()
        process.wait(timeout=60)


def _command_of(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it has ended
        return b""
