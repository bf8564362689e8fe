"""desk serve in-process: the HTTP side, the reload channel, errors and concurrency."""

from __future__ import annotations

import http.client
import json
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
    assert dev.prepare("start") is not None
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


@pytest.mark.parametrize("path,kind", [
    (STORY, "text/html; charset=utf-8"),
    (STORY + "index.md", "text/markdown; charset=utf-8"),
    (STORY + "index.json", "application/json; charset=utf-8"),
    ("/feed.json", "application/feed+json; charset=utf-8"),
    ("/feed.xml", "application/rss+xml; charset=utf-8"),
    ("/atom.xml", "application/atom+xml; charset=utf-8"),
    ("/sitemap.xml", "application/xml; charset=utf-8"),
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
    assert server.state.pages is not None
    css = next(n for n in server.state.pages.files() if re.fullmatch(r"static/site\.\w+\.css", n))
    status, headers, _ = raw_get(server, "/" + css)
    assert status == 200 and headers["content-type"] == "text/css; charset=utf-8"


def test_every_file_has_the_content_type_a_deploy_gives_it(server: DevServer) -> None:
    """One table of types: what the preview serves is what the bucket will."""
    from desk.deploy.headers import content_type

    assert server.state.pages is not None
    names = list(server.state.pages.files())
    assert {n.rpartition(".")[2] for n in names} >= {"html", "md", "json", "xml", "txt", "css",
                                                     "js", "svg"}
    for name in names:
        status, headers, _ = raw_get(server, "/" + name, method="HEAD")
        assert status == 200 and headers["content-type"] == content_type(name), name


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
    assert server.state.pages is not None
    made = server.state.pages.file(STORY.strip("/") + "/index.html")
    assert made is not None and b"EventSource" not in made
    _, _, data = raw_get(server, STORY + "index.json")
    json.loads(data)


# How long a test waits for the next reload event at most. The channel sends keep-alive
# comments meanwhile, so without a bound a test waiting for an event that never comes
# would wait forever rather than fail.
EVENT_WAIT = 120.0


def events(dev: DevServer, page: str = STORY) -> Iterator[str]:
    """The data lines of the reload channel of a page served now, connected before this
    returns (AssertionError: none within EVENT_WAIT)."""
    _, _, body = raw_get(dev, page)
    token = re.search(rb"\?t=([\w-]+)&p=", body)
    assert token is not None
    connection = http.client.HTTPConnection(dev.host, dev.port, timeout=20)
    connection.request("GET", f"/__desk/events?t={token.group(1).decode()}&p={page}")
    response = connection.getresponse()
    assert response.getheader("Content-Type") == "text/event-stream; charset=utf-8"
    assert response.readline() == b"retry: 300\n"  # the channel knows the page now

    def lines() -> Iterator[str]:
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

    return lines()


def test_a_page_is_told_to_reload_when_what_it_shows_changed_only(
        server: DevServer, tmp_path: Path) -> None:
    """Each open page's channel compares what the page shows after a save: a page a save
    leaves as it was is not reloaded, one it changed is (its next event is the reload)."""
    content = tmp_path / "content"
    other = "/stories/2026-11-14/story-number-2/"
    write_story(content, make_story(2))
    assert server.prepare("adds story 2") is not None
    untouched, touched = events(server, other), events(server, STORY)
    # Saves of story 1 only: story 2's page shows the same bytes. (A threading.Thread
    # reads each channel: the first event it gets is the one that counts.)
    got: dict[str, str] = {}
    readers = [threading.Thread(target=lambda c=c, k=k: got.setdefault(k, next(c, "")),
                                daemon=True) for k, c in (("2", untouched), ("1", touched))]
    for reader in readers:
        reader.start()
    write_story(content, make_story(1, headline="Saved once"))
    assert server.prepare("saves story 1") is not None
    readers[1].join(EVENT_WAIT)
    assert got.get("1") == "reload"
    assert "2" not in got  # not told: its page is the same
    write_story(content, make_story(2, headline="Now story 2"))
    assert server.prepare("saves story 2") is not None
    readers[0].join(EVENT_WAIT)
    assert got.get("2") == "reload"


def test_a_page_served_before_a_save_is_told_to_reload_as_its_channel_opens(
        server: DevServer, tmp_path: Path) -> None:
    connection = http.client.HTTPConnection(server.host, server.port, timeout=20)
    connection.request("GET", f"/__desk/events?t=not-this-one&p={STORY}")
    lines = connection.getresponse()
    assert lines.readline() == b"retry: 300\n"
    assert lines.readline() == b"\n"
    assert lines.readline() == b"data: reload\n"
    connection.close()


def test_bad_content_keeps_last_good_site_with_overlay(server: DevServer, tmp_path: Path) -> None:
    channel = events(server)
    story = tmp_path / "content/stories/2026-11-14/story-number-1.json"
    story.write_text('{"schema": "hangingcontext.desk/1", "headline": ')
    assert server.prepare("test") is not None
    assert next(channel) == "reload"  # open pages are told to reload
    status, _, body = raw_get(server, STORY)
    assert status == 200
    assert b'id="desk-errors"' in body and b"Headline of story 1" in body
    assert f"{story}:1:49: invalid JSON: Expecting value".encode() in body
    assert any("invalid JSON" in line for line in server.lines)  # type: ignore[attr-defined]
    write_story(tmp_path / "content", make_story(1, headline="Fixed headline"),
                "story-number-1.json")
    server.prepare("test")
    _, _, body = raw_get(server, STORY)
    assert b'id="desk-errors"' not in body and b"Fixed headline" in body


def test_broken_template_is_an_overlay_too(server: DevServer, tmp_path: Path) -> None:
    raw_get(server, STORY)  # shown before the template breaks
    templates = tmp_path / "templates"
    import shutil
    shutil.copytree(REPO / "templates", templates)
    (templates / "story.html").write_text("{% extends 'base.html' %}{% block main %}{% if %}")
    content = tmp_path / "content"
    server._load = lambda base: load_config(  # type: ignore[method-assign]
        REPO / "pyproject.toml",
        {"content_dir": content, "base_url": base, "templates_dir": templates})
    report = server.prepare("test")
    assert report is not None and not report.ok
    status, _, body = raw_get(server, STORY)
    assert status == 200 and b'id="desk-errors"' in body and b"template error" in body
    assert b"Headline of story 1" in body  # the last good page, under the overlay


def test_fifty_clients_during_rebuilds_get_complete_pages(server: DevServer) -> None:
    expected = raw_get(server, STORY)[2]
    stop = threading.Event()
    failures: list[str] = []

    def rebuild_loop() -> None:
        known = False
        while not stop.is_set():  # with the files changed known, and not, in turn
            server.prepare("load test", set() if known else None)
            known = not known

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
    first = server.state.token
    channel = events(server)
    epoch = server.state.epoch
    story = tmp_path / "content/stories/2026-11-14/story-number-1.json"
    # The watcher needs a moment to start; keep saving until the first rebuild arrives.
    for n in range(20):
        write_story(tmp_path / "content", make_story(1, headline=f"Saved {n}"),
                    "story-number-1.json")
        token = server.state.wait_for_change(first, timeout=1)
        if token != first:
            break
    assert next(channel) == "reload"
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


def test_a_page_whose_key_stands_is_not_rendered_again(server: DevServer,
                                                      tmp_path: Path) -> None:
    """Rendered pages are kept in memory by unit key: after a save, a page it leaves as it
    was is served from memory (the very bytes object), a page it changed is made again."""
    content = tmp_path / "content"
    write_story(content, make_story(2))
    assert server.prepare("adds story 2") is not None
    pages = server.state.pages
    assert pages is not None
    other = "stories/2026-11-14/story-number-2/index.html"
    before, mine = pages.file(other), pages.file(STORY.strip("/") + "/index.html")
    write_story(content, make_story(1, headline="Edited in memory"))
    assert server.prepare("edits story 1", server.content_changed(
        [str(next(content.rglob("story-number-1.json")))])) is not None
    after = server.state.pages
    assert after is not None and after is not pages
    assert after.file(other) is before
    edited = after.file(STORY.strip("/") + "/index.html")
    assert edited is not None and edited != mine and b"Edited in memory" in edited


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
    named = content_paths([str(story)], shown_as.resolve(), shown_as)
    assert walked and set(walked) <= named and str(story) in named


def test_stop_before_start_returns(tmp_path: Path) -> None:
    """A server stopped without ever serving (a script that only builds through it) must
    not wait for a serve loop that never ran."""
    dev = one_story_preview(tmp_path, NOW)
    assert dev.prepare("start") is not None
    stopping = threading.Thread(target=dev.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=30)
    assert not stopping.is_alive(), "stop() hung on a server that never served"
    # Its index stays in the site's preview folder, for the next preview.
    assert [p.name for p in (tmp_path / "cache" / "preview").glob("*.sqlite")]


def test_a_storys_warnings_show_on_its_page_only_and_once_in_the_terminal(
        server: DevServer, tmp_path: Path) -> None:
    content = tmp_path / "content"
    gone = "unknown key 'flourish' is kept but not used"
    story = {**make_story(2), "flourish": "a key the schema does not have"}
    write_story(content, story)
    lines: list[str] = server.lines  # type: ignore[attr-defined]
    assert server.prepare("changed story 2") is not None
    page = "/stories/2026-11-14/story-number-2/"
    _, _, body = raw_get(server, page)
    assert b'id="desk-findings"' in body and b"unknown key &#x27;flourish&#x27;" in body
    assert b"Dismiss" in body
    _, _, same = raw_get(server, page + "index.html")
    assert b'id="desk-findings"' in same
    _, _, other = raw_get(server, STORY)
    assert b'id="desk-findings"' not in other
    assert server.state.pages is not None
    built = server.state.pages.file(page.strip("/") + "/index.html")
    assert built is not None and b"desk-findings" not in built  # never in a made file
    told = [line for line in lines if line.startswith("warning: ")]
    assert len(told) == 1 and gone in told[0]
    # (A change record with it: a new headline alone would be a silent edit's warning.)
    write_story(content, make_story(1, headline="Another save, of another file", corrections=[
        {"at": "2026-11-14T13:00:00Z", "text": "A new headline.", "kind": "update"}]))
    assert server.prepare("changed story 1") is not None
    assert [line for line in lines if line.startswith("warning: ")] == told  # not again
    write_story(content, make_story(2))  # fixed
    assert server.prepare("changed story 2") is not None
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
