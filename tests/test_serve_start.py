"""A preview starts from the index the last preview of the site kept (in the site's
preview folder, named for no port or host), reading only the files that changed, on any
port; it writes no site, and serves, over HTTP, the pages a build from nothing makes
whatever it finds there: an old index, a corrupt one, a template changed meanwhile, the
site's own build's inspections and URL history."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from previews import built_site, served_site
from storygen import REPO, make_corpus, make_story, write_story
from test_serve import NOW

from desk.build.cache import remembered_history
from desk.build.pipeline import build
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.content.history import UrlHistory
from desk.serve.folder import PREVIEW
from desk.serve.server import DevServer

STORIES = 12


class Preview:
    """Previews of one site, one after another, each on a port of its own."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.content = root / "content"
        self.templates = root / "templates"
        self.cache = root / ".desk-cache"
        self.stories: list[dict[str, object]] = []

    def config(self, base_url: str) -> Config:
        return load_config(REPO / "pyproject.toml", {
            "content_dir": self.content, "base_url": base_url, "output_dir": self.root / "out",
            "cache_dir": self.cache, "templates_dir": self.templates})

    def run(self, between: Callable[[DevServer], None] | None = None,
            history: UrlHistory | None = None, jobs: int = 1) -> set[str]:
        """Start a preview (with `jobs` processes), (do `between`), check that it
        serves what a build from nothing makes (starting from `history`), stop it; the
        story files its start read."""
        dev = DevServer(self.config, ("127.0.0.1", 0), NOW, False, lambda line: None)
        try:
            report = dev.prepare("start", jobs=jobs)
            assert report is not None and report.ok, report and report.errors
            read = set(dev.read)
            dev.start()
            if between is not None:
                between(dev)
            reference = self.root / "reference"
            shutil.rmtree(reference, ignore_errors=True)
            assert served_site(dev) == built_site(self.config(dev.base_url), NOW, reference,
                                                  history=history)
        finally:
            dev.stop()
        return read

    @property
    def folder(self) -> Path:
        return self.cache / PREVIEW


def make_preview(tmp_path: Path) -> Preview:
    preview = Preview(tmp_path)
    preview.stories = make_corpus(preview.content, STORIES)
    return preview


def _saved(dev: DevServer, path: Path) -> None:
    report = dev.prepare("save", dev.content_changed([str(path)]))
    assert report is not None and report.ok


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_second_start_on_another_port_reads_only_what_changed(tmp_path: Path,
                                                                jobs: int) -> None:
    # With two processes, the files are looked at in a forked one while the index is
    # read (desk.build.survey), as desk build does.
    preview = make_preview(tmp_path)
    assert len(preview.run(jobs=jobs)) == STORIES  # nothing known: every file read
    edited = write_story(preview.content, {**preview.stories[4], "headline": "Edited"})
    added = write_story(preview.content, make_story(40))
    # Another port (each start takes a free one): the index holds no port.
    assert preview.run(jobs=jobs) == {str(edited), str(added)}
    write_story(preview.content, {**preview.stories[4], "headline": "Edited"})  # touched
    write_story(preview.content, preview.stories[6]).unlink()  # gone
    assert preview.run(jobs=jobs) == set()


def test_saves_then_a_new_start_equal_a_build_from_nothing(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)

    def save(dev: DevServer) -> None:
        _saved(dev, write_story(preview.content, make_story(30)))
        story = write_story(preview.content, {**preview.stories[2], "headline": "Saved"})
        _saved(dev, story)

    preview.run(save)
    assert preview.run() == set()  # the saves' inspections were kept


def test_two_previews_at_once_share_the_index(tmp_path: Path) -> None:
    """A second preview, on another port while the first runs, reads no file the first
    read; each serves what a build from nothing makes at its own base URL."""
    preview = make_preview(tmp_path)
    assert preview.run(lambda dev: None)
    first = DevServer(preview.config, ("127.0.0.1", 0), NOW, False, lambda line: None)
    try:
        assert first.prepare("start") is not None
        first.start()
        edited = write_story(preview.content, {**preview.stories[1], "headline": "Both"})
        _saved(first, edited)
        assert preview.run() == set()
    finally:
        first.stop()


def test_the_preview_writes_no_site(tmp_path: Path) -> None:
    """After a start and saves its folder holds its index (and the templates' compiled
    code) alone, smaller than a quarter of the site a build writes (past the fixed
    sizes of a small site: the schema, the compiled templates)."""
    preview = Preview(tmp_path)
    preview.stories = make_corpus(preview.content, 100)

    def saves(dev: DevServer) -> None:
        for n in range(3):
            _saved(dev, write_story(preview.content, {**preview.stories[n],
                                                      "headline": f"Save {n}"}))

    preview.run(saves)
    kept = {p.relative_to(preview.folder).parts[0] for p in preview.folder.rglob("*")}
    assert kept <= {"templates", ".preview.lock"} | {n for n in kept if n.startswith("index-")}
    assert any(n.endswith(".sqlite") for n in kept), kept
    assert not (tmp_path / "out").exists()  # nor the site's own folder
    size = sum(p.stat().st_size for p in preview.folder.rglob("*") if p.is_file())
    site = sum(p.stat().st_size for p in (tmp_path / "reference").rglob("*") if p.is_file())
    assert size < site / 4, (size, site)


def test_a_template_changed_between_starts_shows_everywhere(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    shutil.copytree(REPO / "templates", preview.templates)
    preview.run()
    base = preview.templates / "base.html"
    base.write_text(base.read_text().replace("</footer>", "<p>Changed between two "
                                                          "previews</p></footer>"))

    def shown(dev: DevServer) -> None:
        assert dev.state.pages is not None
        front = dev.state.pages.file("index.html")
        assert front is not None and b"Changed between two previews" in front

    assert preview.run(shown) == set()


def test_a_corrupt_index_gives_correct_pages(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    preview.run()
    for index in preview.folder.glob("*.sqlite"):
        index.write_bytes(b"not an index at all" * 100)
    assert len(preview.run()) == STORIES


def test_a_preview_starts_from_the_url_history_desk_build_would(tmp_path: Path) -> None:
    """A story published by desk build, then moved: the preview redirects from where the
    site has it, as the site's next build will."""
    preview = make_preview(tmp_path)
    preview.run()
    config = preview.config("https://news.example.org")
    moved = {**preview.stories[3], "slug": "published-in-between"}
    next(preview.content.rglob("story-number-3.json")).unlink()
    write_story(preview.content, moved)
    assert build(config, Clock(NOW)).ok
    next(preview.content.rglob("published-in-between.json")).unlink()
    write_story(preview.content, {**moved, "slug": "moved-again"})
    history, _ = remembered_history(config.cache_dir, config.output_dir)

    def redirects(dev: DevServer) -> None:
        assert dev.state.pages is not None
        old = dev.state.pages.file(f"stories/{str(moved['published_at'])[:10]}/"
                                   "published-in-between/index.html")
        assert old is not None and b"moved-again" in old

    preview.run(redirects, history)
    # The preview's index keeps its records of last publish, no copy of the site's URL
    # paths (read from the site's index at every start).
    (index,) = preview.folder.glob("index-*.sqlite")
    with contextlib.closing(sqlite3.connect(index)) as db:
        assert db.execute("SELECT count(*) FROM url_history").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM last_publish").fetchone()[0] == STORIES


def test_a_first_preview_after_desk_build_takes_its_inspections(tmp_path: Path) -> None:
    """With no index of its own, a preview's start takes the inspections the site's own
    `desk build` saved: no file's own findings depend on the base URL (a story's own URLs
    are compared with the layout's by path), so the check keys agree, and the preview
    reads no story file. Its pages are what a build from nothing makes."""
    from desk.build.inspection import inspect_file
    from desk.build.keys import check_key

    preview = make_preview(tmp_path)
    # Stories whose own URLs disagree with the layout: warnings either way.
    write_story(preview.content, {**preview.stories[1], "url": "https://elsewhere.example/x/"})
    write_story(preview.content, {**preview.stories[2],
                                  "url": "https://news.example.org/desk/stories/x/y/"})
    published = preview.config("https://news.example.org/desk")
    local = preview.config("http://127.0.0.1:8123").model_copy(update={"search": False})
    assert check_key(published) == check_key(local)
    # Nor on where the templates and static files are, or how the settings name them
    # (relative to where desk runs when inside it).
    for key in ("templates_dir", "static_dir"):
        elsewhere = published.model_copy(update={key: tmp_path / "elsewhere"})
        assert check_key(elsewhere) == check_key(published)
    assert check_key(published.model_copy(update={"page_size": 7})) != check_key(published)
    files = sorted(str(p) for p in preview.content.rglob("*.json"))
    found = [inspect_file(path, published)[1] for path in files]
    assert found == [inspect_file(path, local)[1] for path in files]
    assert sum(1 for f in found if f) >= 2  # the two disagreements
    assert build(published, Clock(NOW)).ok
    history, _ = remembered_history(published.cache_dir, published.output_dir)
    assert preview.run(history=history) == set()


def test_each_file_made_first_is_the_file_made_after_every_other(tmp_path: Path) -> None:
    """A preview makes the site's units around the stories only as far as a page asked
    for needs them (a front page needs a few): each file made by pages that made nothing
    before is the one made once every unit is indexed."""
    from desk.build.cache import BuildCache, Session
    from desk.build.pipeline import Prepared, prepare
    from desk.serve.demand import PagesOnDemand, Rendered

    preview = make_preview(tmp_path)
    cache = BuildCache()
    cache.session = Session()
    config = preview.config("http://127.0.0.1:8000").model_copy(update={"search": False})
    made = prepare(config, Clock(NOW, drafts=True), cache, tmp_path / "out")
    assert isinstance(made, Prepared)
    every = PagesOnDemand(made, Rendered()).files()
    assert len(every) > 50
    for name, data in every.items():
        assert PagesOnDemand(made, Rendered()).file(name) == data, name
