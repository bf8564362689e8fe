"""desk serve in-process: the HTTP side, the reload channel, errors and concurrency."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from previews import one_story_preview
from storygen import REPO, make_story, write_story

from desk.config import load_config
from desk.serve.server import DevServer

NOW = datetime(2026, 11, 15, tzinfo=UTC)
STORY = "/stories/2026-11-14/story-number-1/"
SECRET = b"TOP-SECRET-OUTSIDE-THE-SITE"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[DevServer]:
    (tmp_path / "secret.txt").write_bytes(SECRET)
    lines: list[str] = []
    dev = one_story_preview(tmp_path, NOW, lines.append)
    dev.lines = lines  # type: ignore[attr-defined]
    assert dev.rebuild("start") is not None
    dev.start()
    yield dev
    dev.stop()


def raw_get(dev: DevServer, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """Send the request line exactly as given (clients would normalise the path)."""
    with socket.create_connection((dev.host, dev.port), timeout=10) as sock:
        sock.sendall(f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize("target", [
    "/../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/%2E%2E%2Fsecret.txt",
    "/stories/../../secret.txt", "/..\\secret.txt", "/%5c..%5csecret.txt", "//etc/passwd",
    "/%2fetc%2fpasswd", "/etc/passwd", "/static/%00", "/./index.html",
])
def test_path_escapes_never_leave_the_site(server: DevServer, target: str) -> None:
    status, _, body = raw_get(server, target)
    assert status in (400, 404)
    assert SECRET not in body and b"root:" not in body


def test_symlink_out_of_the_site_is_not_followed(server: DevServer, tmp_path: Path) -> None:
    os.symlink(tmp_path / "secret.txt", server.state.folder / "leak.txt")
    os.symlink(tmp_path, server.state.folder / "leakdir")
    for target in ("/leak.txt", "/leakdir/secret.txt", "/leakdir/"):
        status, _, body = raw_get(server, target)
        assert status == 404 and SECRET not in body


@pytest.mark.parametrize("path,kind", [
    (STORY, "text/html; charset=utf-8"),
    (STORY + "index.md", "text/markdown; charset=utf-8"),
    (STORY + "index.json", "application/json; charset=utf-8"),
    ("/feed.json", "application/feed+json; charset=utf-8"),
    ("/feed.xml", "application/xml; charset=utf-8"),
    ("/robots.txt", "text/plain; charset=utf-8"),
    ("/license.xml", "application/rsl+xml; charset=utf-8"),
])
def test_content_types_and_no_store(server: DevServer, path: str, kind: str) -> None:
    status, headers, body = raw_get(server, path)
    assert status == 200
    assert headers["content-type"] == kind
    assert headers["cache-control"] == "no-store"
    assert int(headers["content-length"]) == len(body)


def test_css_is_served_with_its_type(server: DevServer) -> None:
    css = next((server.state.folder / "static").glob("site.*.css"))
    status, headers, _ = raw_get(server, "/static/" + css.name)
    assert status == 200 and headers["content-type"] == "text/css; charset=utf-8"


def test_folders_redirect_and_unknown_paths_get_404_page(server: DevServer) -> None:
    status, headers, _ = raw_get(server, STORY.rstrip("/"))
    assert status == 301 and headers["location"] == STORY
    status, _, body = raw_get(server, "/no/such/page/")
    assert status == 404 and b"Page not found" in body


def test_head_sends_headers_only(server: DevServer) -> None:
    status, headers, body = raw_get(server, STORY, method="HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 1000


def test_reload_script_only_in_served_html(server: DevServer) -> None:
    _, _, body = raw_get(server, STORY)
    assert b"EventSource" in body
    assert b"EventSource" not in (server.state.folder / STORY.strip("/") / "index.html").read_bytes()
    _, _, data = raw_get(server, STORY + "index.json")
    json.loads(data)


# How long a test waits for the next reload event at most. The channel sends keep-alive
# comments meanwhile, so without a bound a test waiting for an event that never comes
# would wait forever rather than fail.
EVENT_WAIT = 120.0


def events(dev: DevServer) -> Iterator[str]:
    """The data lines of the reload channel (AssertionError: none within EVENT_WAIT)."""
    connection = http.client.HTTPConnection(dev.host, dev.port, timeout=20)
    connection.request("GET", "/__desk/events")
    response = connection.getresponse()
    assert response.getheader("Content-Type") == "text/event-stream; charset=utf-8"
    try:
        last = time.monotonic()
        while line := response.readline():
            if line.startswith(b"data: "):
                yield line[6:].strip().decode()
                last = time.monotonic()
            elif time.monotonic() - last > EVENT_WAIT:
                raise AssertionError(f"no reload event within {EVENT_WAIT:.0f} s")
    finally:
        connection.close()


def test_bad_content_keeps_last_good_site_with_overlay(server: DevServer, tmp_path: Path) -> None:
    channel = events(server)
    first = next(channel)
    story = tmp_path / "content/stories/2026-11-14/story-number-1.json"
    story.write_text('{"schema": "hangingcontext.desk/1", "headline": ')
    assert server.rebuild("test") is not None
    assert next(channel) != first  # open pages are told to reload
    status, _, body = raw_get(server, STORY)
    assert status == 200
    assert b'id="desk-errors"' in body and b"Headline of story 1" in body
    assert f"{story}:1:49: invalid JSON: Expecting value".encode() in body
    assert any("invalid JSON" in line for line in server.lines)  # type: ignore[attr-defined]
    write_story(tmp_path / "content", make_story(1, headline="Fixed headline"),
                "story-number-1.json")
    server.rebuild("test")
    _, _, body = raw_get(server, STORY)
    assert b'id="desk-errors"' not in body and b"Fixed headline" in body


def test_broken_template_is_an_overlay_too(server: DevServer, tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    import shutil
    shutil.copytree(REPO / "templates", templates)
    (templates / "story.html").write_text("{% extends 'base.html' %}{% block main %}{% if %}")
    content = tmp_path / "content"
    server._load = lambda base: load_config(  # type: ignore[method-assign]
        REPO / "pyproject.toml",
        {"content_dir": content, "base_url": base, "templates_dir": templates})
    server.rebuild("test")
    status, _, body = raw_get(server, STORY)
    assert status == 200 and b'id="desk-errors"' in body and b"template error" in body


def test_fifty_clients_during_rebuilds_get_complete_pages(server: DevServer) -> None:
    expected = raw_get(server, STORY)[2]
    stop = threading.Event()
    failures: list[str] = []

    def rebuild_loop() -> None:
        in_place = False
        while not stop.is_set():  # swaps and in-place updates, in turn
            server.rebuild("load test", content_only=in_place)
            in_place = not in_place

    def client() -> None:
        for _ in range(5):
            status, headers, body = raw_get(server, STORY)
            if status != 200 or int(headers["content-length"]) != len(body) or (
                    not body.rstrip().endswith(b"</html>")):
                failures.append(f"{status} {len(body)}")
            elif body.split(b"<script>")[0] != expected.split(b"<script>")[0]:
                failures.append("different page")

    rebuilder = threading.Thread(target=rebuild_loop)
    rebuilder.start()
    clients = [threading.Thread(target=client) for _ in range(50)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(60)
    stop.set()
    rebuilder.join(60)
    assert failures == []
    assert server.state.epoch > 2


def test_watcher_rebuilds_once_per_burst(server: DevServer, tmp_path: Path) -> None:
    watcher = threading.Thread(target=server.watch, daemon=True)
    watcher.start()
    channel = events(server)
    first = next(channel)
    epoch = server.state.epoch
    story = tmp_path / "content/stories/2026-11-14/story-number-1.json"
    # The watcher needs a moment to start; keep saving until the first rebuild arrives.
    for n in range(20):
        write_story(tmp_path / "content", make_story(1, headline=f"Saved {n}"),
                    "story-number-1.json")
        token = server.state.wait_for_change(first, timeout=1)
        if token != first:
            break
    assert next(channel) != first
    _, _, body = raw_get(server, STORY)
    assert b"Saved " in body
    # A burst of saves coalesces.
    before = server.state.epoch
    for n in range(5):
        write_story(tmp_path / "content", make_story(1, headline=f"Burst {n}"),
                    "story-number-1.json")
    server.state.wait_for_change(server.state.token, timeout=10)
    assert server.state.epoch - before <= 2
    assert server.state.epoch > epoch
    assert story.exists()


def test_port_in_use_is_one_clear_line(server: DevServer) -> None:
    from click.testing import CliRunner

    from desk.cli import main
    result = CliRunner().invoke(main, ["serve", "--config", str(REPO / "pyproject.toml"),
                                       "--port", str(server.port)])
    assert result.exit_code == 1
    assert result.stderr == (f"desk serve: port {server.port} on 127.0.0.1 is in use; "
                             f"try --port {server.port + 1}\n")


def test_in_place_rebuilds_equal_a_fresh_build(server: DevServer, tmp_path: Path) -> None:
    from conftest import tree

    from desk.build.cache import BuildCache
    from desk.build.pipeline import build
    from desk.build.target import FreshStaging
    from desk.content.catalog import Clock
    from desk.content.history import read_history_file

    content = tmp_path / "content"
    for n in range(2, 6):
        write_story(content, make_story(n))
    assert server.rebuild("test", content_only=True) is not None  # new stories
    write_story(content, make_story(3, headline="Edited in place"))
    next(content.rglob("story-number-4.json")).unlink()
    before = server.state.folder.stat().st_ino
    report = server.rebuild("test", content_only=True)
    assert report is not None and report.ok and report.reused > 0
    assert server.state.folder.stat().st_ino == before  # the same folder, updated
    config = load_config(REPO / "pyproject.toml", {
        "content_dir": content, "base_url": server.base_url, "search": False,
        "cache_dir": tmp_path / "cache"})
    # From nothing but the URL history, which remembers the deleted story 4's URL.
    history, _ = read_history_file(server.state.folder / ".well-known/desk-urls.json")
    assert build(config, Clock(NOW), FreshStaging(tmp_path / "fresh"),
                 BuildCache(history=history)).ok
    assert tree(server.state.folder) == tree(tmp_path / "fresh")
    _, _, body = raw_get(server, "/stories/2026-11-14/story-number-3/")
    assert b"Edited in place" in body
    status, _, _ = raw_get(server, "/stories/2026-11-14/story-number-4/")
    assert status == 404

    site = tree(server.state.folder)
    (content / "stories/2026-11-14/story-number-5.json").write_text("{broken")
    assert not server.rebuild("test", content_only=True).ok
    assert tree(server.state.folder) == site  # a failed build touches nothing


def test_changed_paths_are_named_as_the_content_walk_names_them(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from desk.content.loader import STORIES, content_files
    from desk.serve.server import content_paths

    real = tmp_path / "real"
    (real / "content" / "stories" / "2026-11-14").mkdir(parents=True)
    story = real / "content" / "stories" / "2026-11-14" / "a.json"
    story.write_text("{}", encoding="utf-8")
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(tmp_path / "link")
    shown_as = Path("content")  # relative, through a symlinked working folder
    walked = content_files(shown_as, STORIES, [])
    named, walked_only = content_paths([str(story)], shown_as.resolve(), shown_as)
    assert walked and set(walked) <= named and walked_only == walked


def test_stop_before_start_returns(tmp_path: Path) -> None:
    """A server stopped without ever serving (a script that only builds through it) must
    not wait for a serve loop that never ran."""
    dev = one_story_preview(tmp_path, NOW)
    assert dev.rebuild("start") is not None
    stopping = threading.Thread(target=dev.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=30)
    assert not stopping.is_alive(), "stop() hung on a server that never served"
    # The site stays in the site's one preview folder, which the next preview clears.
    assert dev.state.folder == tmp_path / "cache" / "preview" / "site"
    assert (dev.state.folder / "index.html").is_file()


def test_a_storys_warnings_show_on_its_page_only_and_once_in_the_terminal(
        server: DevServer, tmp_path: Path) -> None:
    content = tmp_path / "content"
    gone = "unknown key 'flourish' is kept but not used"
    story = {**make_story(2), "flourish": "a key the schema does not have"}
    write_story(content, story)
    lines: list[str] = server.lines  # type: ignore[attr-defined]
    assert server.rebuild("changed story 2", content_only=True) is not None
    page = "/stories/2026-11-14/story-number-2/"
    _, _, body = raw_get(server, page)
    assert b'id="desk-findings"' in body and b"unknown key &#x27;flourish&#x27;" in body
    assert b"Dismiss" in body
    _, _, same = raw_get(server, page + "index.html")
    assert b'id="desk-findings"' in same
    _, _, other = raw_get(server, STORY)
    assert b'id="desk-findings"' not in other
    built = (server.state.folder / page.strip("/") / "index.html").read_bytes()
    assert b"desk-findings" not in built  # never in the files a build writes
    told = [line for line in lines if line.startswith("warning: ")]
    assert len(told) == 1 and gone in told[0]
    # (A change record with it: a new headline alone would be a silent edit's warning.)
    write_story(content, make_story(1, headline="Another save, of another file", corrections=[
        {"at": "2026-11-14T13:00:00Z", "text": "A new headline.", "kind": "update"}]))
    assert server.rebuild("changed story 1", content_only=True) is not None
    assert [line for line in lines if line.startswith("warning: ")] == told  # not again
    write_story(content, make_story(2))  # fixed
    assert server.rebuild("changed story 2", content_only=True) is not None
    _, _, fixed = raw_get(server, page)
    assert b'id="desk-findings"' not in fixed


def test_content_hashed_files_are_cached_and_pages_never(server: DevServer) -> None:
    """A reload fetches the page again, not its stylesheet and scripts (their names
    change with their bytes)."""
    _, _, page = raw_get(server, STORY)
    found = re.search(rb'href="(/static/site\.[0-9a-f]{10}\.css)"', page)
    assert found is not None
    status, headers, _ = raw_get(server, found.group(1).decode())
    assert status == 200 and headers["cache-control"] == "max-age=31536000, immutable"
    _, headers, _ = raw_get(server, STORY)
    assert headers["cache-control"] == "no-store"
    _, headers, _ = raw_get(server, "/static/favicon.svg")
    assert headers["cache-control"] == "no-store"  # its name stays when it changes
