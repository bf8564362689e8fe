"""desk serve in a real browser: saves show up in an open page without the test reloading
it; moved stories' old URLs lead to the story, in the built site and in the preview."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import read_until
from storygen import REPO, make_story, write_story

# Debian's chromium; DESK_CHROMIUM names another build (GitHub's runners ship Chrome).
CHROMIUM = Path(os.environ.get("DESK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
STORY = "/stories/2026-11-14/story-number-1/"

pytestmark = pytest.mark.browser


def require_chromium() -> None:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (see .ci/run)")
        pytest.skip("Debian's chromium is not installed")


@pytest.fixture
def browser_page() -> Iterator[object]:
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        yield page
        browser.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A desk project of its own: config, content, templates and static files."""
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    shutil.copytree(REPO / "static", tmp_path / "static")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.desk]\nbase_url = "https://hangingcontext.com"\ntitle = "Preview"\n',
        encoding="utf-8")
    write_story(tmp_path / "content", make_story(1))
    return tmp_path


@pytest.fixture
def served(project: Path) -> Iterator[str]:
    """`desk serve` on a free port, as editors run it; yields its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "desk", "serve", "--port", "0", "--now", "2026-11-15T00:00:00Z"],
        cwd=project, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    url = ""
    for line in process.stderr:  # blocks on the server's own output, no sleeping
        found = re.search(r"Serving (http://\S+)/ ", line)
        if found:
            url = found.group(1)
            break
    assert url, "desk serve did not start"
    # Keep reading its output so the server never blocks on a full pipe.
    drain = threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True)
    drain.start()
    try:
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_saves_reload_the_open_page(browser_page, served: str, project: Path) -> None:
    from playwright.sync_api import expect

    page = browser_page
    page.goto(served + STORY)
    expect(page.locator("h1")).to_have_text("Headline of story 1")

    write_story(project / "content", make_story(1, headline="A headline saved on disk"),
                "story-number-1.json")
    expect(page.locator("h1")).to_have_text("A headline saved on disk", timeout=15_000)

    story_file = project / "content/stories/2026-11-14/story-number-1.json"
    story_file.write_text('{"schema": "hangingcontext.desk/1",', encoding="utf-8")
    expect(page.locator("#desk-errors")).to_be_visible(timeout=15_000)
    expect(page.locator("#desk-errors")).to_contain_text("invalid JSON")
    expect(page.locator("h1")).to_have_text("A headline saved on disk")
    with urllib.request.urlopen(served + "/") as response:  # the server still answers
        assert response.status == 200

    write_story(project / "content", make_story(1, headline="Fixed again"),
                "story-number-1.json")
    expect(page.locator("#desk-errors")).to_have_count(0, timeout=15_000)
    expect(page.locator("h1")).to_have_text("Fixed again")

    template = project / "templates/story.html"
    template.write_text(template.read_text().replace(
        '<h1>{{ s.headline }}</h1>', '<h1 class="changed">{{ s.headline }}</h1>'))
    expect(page.locator("h1.changed")).to_have_text("Fixed again", timeout=15_000)


def _interruptible() -> None:
    """Give the child Ctrl-C's default action: a test run started in the background by a
    shell without job control ignores SIGINT, and its children would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_cleanly(project: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "desk", "serve", "--port", "0"],
        cwd=project, stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible)
    assert process.stderr is not None
    read_until(process.stderr, [], "Serving ")
    process.send_signal(signal.SIGINT)
    rest = process.stderr.read()
    assert process.wait(20) == 0
    assert "Traceback" not in rest and rest.rstrip().endswith("Stopped.")


class QuietFiles(SimpleHTTPRequestHandler):
    """A static file server for a built site, as a host would serve it."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def test_moved_stories_redirect_in_chromium(browser_page, tmp_path: Path) -> None:
    """A slug change, then a move to another day: both old URLs lead Chromium to the story,
    in the built site and in the preview (which starts from the built site's history)."""
    from playwright.sync_api import expect

    from desk.build.pipeline import build
    from desk.config import load_config
    from desk.content.catalog import Clock
    from desk.serve.server import DevServer

    content, out = tmp_path / "content", tmp_path / "public"
    settings = {"content_dir": content, "output_dir": out, "cache_dir": tmp_path / "cache"}
    now = datetime(2026, 11, 15, tzinfo=UTC)
    config = load_config(REPO / "pyproject.toml", {**settings, "search": False})
    write_story(content, make_story(1), "one.json")
    assert build(config, Clock(now)).ok
    write_story(content, make_story(1, slug="renamed"), "one.json")
    assert build(config, Clock(now)).ok
    (content / "stories/2026-11-14/one.json").unlink()
    write_story(content, make_story(1, slug="renamed-again",
                                    published_at=datetime(2026, 11, 13, 12, 1, tzinfo=UTC)),
                "one.json")
    assert build(config, Clock(now)).ok
    old = [STORY, "/stories/2026-11-14/renamed/"]
    final = "/stories/2026-11-13/renamed-again/"

    files = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietFiles, directory=str(out)))
    threading.Thread(target=files.serve_forever, daemon=True).start()
    dev = DevServer(lambda base: load_config(REPO / "pyproject.toml", {**settings,
                                                                       "base_url": base}),
                    ("127.0.0.1", 0), now, False, lambda line: None)
    try:
        assert dev.prepare("start") is not None
        dev.start()
        page = browser_page
        for site in (f"http://127.0.0.1:{files.server_port}", dev.base_url):
            for path in old:
                page.goto(site + path)
                expect(page).to_have_url(site + final)
                expect(page.locator("h1")).to_have_text("Headline of story 1")
    finally:
        dev.stop()
        files.shutdown()
        files.server_close()
