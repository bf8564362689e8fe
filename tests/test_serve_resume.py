"""A preview started again on what the last one left serves its site at once when nothing
it is built from changed, and builds first whenever something did: an edit while no
preview ran, a template, the settings, a preview that did not stop cleanly. The site
served at once is the one a build makes (its first build, in the background, changes no
page); until that build ends only HTML pages and assets are served."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from conftest import tree
from storygen import REPO, make_story, write_story
from test_serve import NOW
from test_serve_start import Preview, make_preview

from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.build.target import FreshStaging
from desk.build.writer import files_of
from desk.content.catalog import Clock
from desk.serve.folder import PREVIEW, RECORD
from desk.serve.resume import Record
from desk.serve.server import DevServer, state_files
from desk.serve.shown import SiteState

READY = "ready"


class Lines:
    """What a preview prints, with a wait for a line to come."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()

    def echo(self, line: str) -> None:
        with self._changed:
            self.lines.append(line)
            self._changed.notify_all()

    def wait_for(self, start: str, count: int = 1) -> None:
        with self._changed:
            assert self._changed.wait_for(
                lambda: sum(line.startswith(start) for line in self.lines) >= count, 120), (
                self.lines)


@contextmanager
def serving(preview: Preview) -> Iterator[tuple[DevServer, Lines]]:
    """A preview as `desk serve` runs it (DevServer.run), until the block ends; the
    block starts once pages are served and saves watched."""
    lines = Lines()
    dev = DevServer(preview.config, ("127.0.0.1", preview.port), NOW, False, lines.echo)
    preview.base_url = dev.base_url
    runner = threading.Thread(target=dev.run, args=(1, lambda: lines.echo(READY)))
    runner.start()
    try:
        lines.wait_for(READY)
        yield dev, lines
    finally:
        dev.stop()
        runner.join(60)
        assert not runner.is_alive()


def started(preview: Preview) -> list[str]:
    """Start a preview, let its first build end, stop it: its first lines."""
    with serving(preview) as (_, lines):
        _settle(lines)
    return lines.lines


def _settle(lines: Lines) -> None:
    """Wait for the first build of a start (or of a resumed start) to end."""
    with lines._changed:
        assert lines._changed.wait_for(lambda: any(
            line.startswith(("start:", "resumed:")) for line in lines.lines), 120), lines.lines


def test_a_preview_started_again_serves_its_site_at_once(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    first = started(preview)
    # Nothing to resume: served once the start's build made its catalog, pages made on
    # demand until it ends (desk.serve.demand).
    assert first.index(READY) < next(i for i, line in enumerate(first)
                                     if line.startswith("start:"))
    assert (preview.cache / PREVIEW / RECORD).is_file()
    with serving(preview) as (dev, lines):
        # Served before its build: the record was used up (a preview killed now leaves
        # none, so the next one builds first).
        assert not (preview.cache / PREVIEW / RECORD).exists()
        lines.wait_for("resumed:")
        assert lines.lines.index(READY) < lines.lines.index(next(
            line for line in lines.lines if line.startswith("resumed:")))
        # Its build in the background changed no page: the site served was the one a
        # build makes.
        assert dev.state.paths[dev.state.epoch] == ()
        assert not dev.state.warming
    assert tree(preview.site) == preview.from_nothing()


def test_any_change_while_no_preview_ran_builds_first(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    started(preview)
    changes = [
        lambda: write_story(preview.content, {**preview.stories[2], "headline": "Edited"}),
        lambda: write_story(preview.content, make_story(30)),
        lambda: next(preview.content.rglob("story-number-4.json")).unlink(),
        lambda: _template(preview, "<p>A template changed</p>"),
    ]
    for number, change in enumerate(changes):
        change()
        lines = started(preview)
        built_first = next(i for i, line in enumerate(lines)
                           if line.startswith(("start:", "resumed:")))
        # Not resumed: its pages are the start's build's (on demand until it ends).
        assert lines[built_first].startswith("start:"), (number, lines)
        assert tree(preview.site) == preview.from_nothing(), number
    # Nothing changed since: served at once again.
    lines = started(preview)
    assert any(line.startswith("resumed:") for line in lines), lines


def test_a_content_folder_that_is_a_repository_of_its_own_resumes(tmp_path: Path) -> None:
    """git's own files below the content folder are none a build reads: a commit or
    a fetch between two previews changes no page, and their tens of thousands of
    objects are not looked at on every save."""
    preview = make_preview(tmp_path)
    hidden = preview.content / ".git" / "objects"
    hidden.mkdir(parents=True)
    (hidden / "aa").write_text("one")
    (preview.content / "pages" / ".draft.md.swp").parent.mkdir(exist_ok=True)
    (preview.content / "pages" / ".draft.md.swp").write_text("an editor's swap file")
    started(preview)
    (hidden / "bb").write_text("a commit since")
    (preview.content / "pages" / ".draft.md.swp").write_text("saved again")
    lines = started(preview)
    assert any(line.startswith("resumed:") for line in lines), lines
    assert tree(preview.site) == preview.from_nothing()


def test_a_save_right_after_a_resumed_start_is_built(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    started(preview)
    with serving(preview) as (dev, lines):
        write_story(preview.content, {**preview.stories[5], "headline": "Saved at the start"})
        lines.wait_for("resumed:")
        lines.wait_for("changed ")
        assert dev.settled()
    built = tree(preview.site)
    assert built == preview.from_nothing()
    assert b"Saved at the start" in built["index.html"]


def test_a_preview_that_did_not_stop_cleanly_leaves_no_record(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    started(preview)
    record = preview.cache / PREVIEW / RECORD
    # A record that names another site, or a garbled one: not served at once.
    text = record.read_text(encoding="utf-8")
    record.write_text(text.replace('"site_id": "', '"site_id": "x'), encoding="utf-8")
    lines = started(preview)
    assert not any(line.startswith("resumed:") for line in lines), lines
    record.write_text("{not json", encoding="utf-8")
    lines = started(preview)
    assert not any(line.startswith("resumed:") for line in lines), lines
    assert tree(preview.site) == preview.from_nothing()


def test_a_held_story_coming_due_is_no_time_to_resume() -> None:
    recorded = Record("site", "settings", "content", "history", " ",
                      (NOW + timedelta(hours=1)).isoformat())
    now = Record("", "settings", "content", "history", " ", "")
    assert recorded.resumable(now, NOW)
    assert not recorded.resumable(now, NOW + timedelta(hours=1))
    assert not recorded.resumable(Record("", "other", "content", "history", " ", ""), NOW)


def test_while_a_resumed_preview_builds_only_html_and_assets_are_served(
        tmp_path: Path) -> None:
    state = SiteState(folder=tmp_path)
    state.resume()
    state.wait_until_current("stories/a/index.html", timeout=30)  # at once (assets are
    # never waited for: see Handler.respond)
    served = threading.Event()
    waiting = threading.Thread(target=lambda: (
        state.wait_until_current("feed.xml", timeout=60), served.set()))
    waiting.start()
    waiting.join(0.2)
    assert not served.is_set()  # the feed may be about to change: it waits
    state.publish(None, ())
    waiting.join(60)
    assert served.is_set()


def _template(preview: Preview, paragraph: str) -> None:
    shipped = (REPO / "templates" / "base.html").read_text(encoding="utf-8")
    preview.templates.mkdir(exist_ok=True)
    (preview.templates / "base.html").write_text(
        shipped.replace("</body>", f"{paragraph}</body>"), "utf-8")


def test_no_html_page_depends_on_the_clock_but_through_what_is_published(
        tmp_path: Path) -> None:
    """Why a resumed preview serves HTML pages before its first build ends: built at two
    times with the same stories out, every HTML page is the same (the feeds and the news
    sitemap are not: they wait)."""
    preview = make_preview(tmp_path)
    config = preview.config("http://127.0.0.1:8000").model_copy(update={"search": False})
    sites = []
    for number, now in enumerate((NOW, NOW + timedelta(days=9))):
        folder = tmp_path / f"at-{number}"
        assert build(config, Clock(now, drafts=True), FreshStaging(folder), BuildCache()).ok
        sites.append(tree(folder))
    html = [{name: data for name, data in site.items() if name.endswith(".html")}
            for site in sites]
    assert html[0] == html[1] and len(html[0]) > 20
    assert sites[0] != sites[1]  # the clock shows elsewhere: this test can tell


def test_a_preview_started_again_after_saves_changes_no_page(tmp_path: Path) -> None:
    """The saved state of a site updated in place names every file of it (the files
    rendered on every build too): a preview started again after saves takes its files
    from there, and its first build rewrites no page."""
    preview = make_preview(tmp_path)
    dev = DevServer(preview.config, ("127.0.0.1", preview.port), NOW, False, lambda line: None)
    try:
        assert dev.rebuild("start") is not None
        saved = write_story(preview.content, {**preview.stories[5], "headline": "Saved"})
        report = dev.saved("saved", [str(saved)])
        assert report is not None and report.ok
        assert state_files(dev._cache.state) == files_of(dev.state.folder)
        preview.base_url = dev.base_url
    finally:
        dev.stop()
    dev = DevServer(preview.config, ("127.0.0.1", preview.port), NOW, False, lambda line: None)
    try:
        assert dev._resume()
        report = dev.rebuild("resumed", content_only=True)
        assert report is not None and report.ok
        assert dev.state.paths[dev.state.epoch] == ()
    finally:
        dev.stop()
    assert tree(preview.site) == preview.from_nothing()
