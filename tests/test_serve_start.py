"""A preview starts from what the last preview of the site left (its site and build
cache, in the site's preview folder), re-rendering only what differs, and shows the
pages a build from nothing makes whatever it finds there: an old cache, another site's,
a corrupt one, a template changed meanwhile, a half-written folder."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from conftest import tree
from ports import lasting_port
from storygen import REPO, make_corpus, make_story, write_story
from test_serve import NOW

from desk.build.cache import BuildCache, remembered_history
from desk.build.pipeline import BuildReport, build
from desk.build.target import FreshStaging
from desk.build.writer import MARKER
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.content.history import UrlHistory
from desk.serve.folder import PREVIEW
from desk.serve.server import DevServer

STORIES = 12


class Preview:
    """Previews of one site, one after another, on the same port (the base URL of the
    pages), as an editor starts them day after day."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.content = root / "content"
        self.templates = root / "templates"
        self.cache = root / ".desk-cache"
        self.stories: list[dict[str, object]] = []
        self.port = lasting_port()

    def config(self, base_url: str) -> Config:
        return load_config(REPO / "pyproject.toml", {
            "content_dir": self.content, "base_url": base_url, "output_dir": self.root / "out",
            "cache_dir": self.cache, "templates_dir": self.templates})

    def run(self, between: Callable[[DevServer], None] | None = None) -> BuildReport:
        """Start a preview, build as it starts, (do `between`), stop it."""
        dev = DevServer(self.config, ("127.0.0.1", self.port), NOW, False, lambda line: None)
        try:
            report = dev.rebuild("start")
            assert report is not None and report.ok, report and report.errors
            if between is not None:
                between(dev)
            self.base_url = dev.base_url
        finally:
            dev.stop()
        return report

    @property
    def site(self) -> Path:
        return self.cache / PREVIEW / "site"

    def from_nothing(self, history: UrlHistory | None = None) -> dict[str, bytes]:
        """What a build from nothing makes of the content, as the preview builds it
        (starting from `history`, if given)."""
        reference = self.root / "reference"
        shutil.rmtree(reference, ignore_errors=True)  # its URL history is no build's
        config = self.config(self.base_url).model_copy(update={"search": False})
        assert build(config, Clock(NOW, drafts=True), FreshStaging(reference),
                     BuildCache(history=history)).ok
        return tree(reference)


def make_preview(tmp_path: Path) -> Preview:
    preview = Preview(tmp_path)
    preview.stories = make_corpus(preview.content, STORIES)
    return preview


def test_a_second_start_renders_only_what_changed(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    first = preview.run()
    assert first.reused == 0
    write_story(preview.content, {**preview.stories[3], "headline": "Edited while no preview ran"})
    second = preview.run()
    assert second.reused > STORIES  # every unchanged story and page kept
    assert tree(preview.site) == preview.from_nothing()
    unchanged = preview.run()
    assert unchanged.reused > second.reused


def test_saves_then_a_new_start_equal_a_build_from_nothing(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)

    def saves(dev: DevServer) -> None:
        write_story(preview.content, make_story(40, headline="Saved during the preview"))
        assert dev.rebuild("save", content_only=True).ok  # type: ignore[union-attr]
        next(preview.content.rglob("story-number-2.json")).unlink()
        assert dev.rebuild("save", content_only=True).ok  # type: ignore[union-attr]

    preview.run(saves)
    write_story(preview.content, make_story(41))  # and one more before the next start
    preview.run()
    assert tree(preview.site) == preview.from_nothing()



def test_a_story_linked_to_and_saved_after_a_second_start_shows_where_it_is_linked(
        tmp_path: Path) -> None:
    """A second start carries the keys of the stories unchanged since the last preview
    without making them, as an hourly build does, and recalls them for its saves with
    where their links lead: a save to a story that another links to, by its published
    URL under the preview's own base URL, shows its new headline on the page linking to
    it, as a build from nothing does."""
    preview = make_preview(tmp_path)

    def published(story: dict[str, object]) -> str:
        return (f"https://hangingcontext.com/stories/{str(story['published_at'])[:10]}/"
                f"{story['slug']}/")

    linked, linking = preview.stories[4], preview.stories[5]
    write_story(preview.content, {**linking, "url": published(linking),
                                  "related": [{"url": published(linked), "headline": ""}]})
    preview.run()

    def save(dev: DevServer) -> None:
        write_story(preview.content, {**linked, "headline": "The linked story, edited"})
        report = dev.rebuild("save", content_only=True)
        assert report is not None and report.ok

    second = preview.run(save)
    assert second.reused > STORIES  # the second start kept what had not changed
    assert tree(preview.site) == preview.from_nothing()
    page = preview.site / published(linking).removeprefix("https://hangingcontext.com/")
    assert b"The linked story, edited" in (page / "index.html").read_bytes()


def test_a_template_changed_between_starts_shows_everywhere(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    preview.run()
    shipped = REPO / "templates" / "base.html"
    preview.templates.mkdir()
    text = shipped.read_text(encoding="utf-8")
    assert "</body>" in text
    (preview.templates / "base.html").write_text(
        text.replace("</body>", "<p>Changed between two previews</p></body>"), "utf-8")
    preview.run()
    built = tree(preview.site)
    assert built == preview.from_nothing()
    assert b"Changed between two previews" in built["index.html"]


def test_a_cache_of_other_content_or_a_corrupt_one_gives_correct_pages(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    preview.run()
    other = make_preview(tmp_path / "other")  # another site's preview, on its own port
    other.port = preview.port
    for story in other.stories:
        write_story(other.content, {**story, "headline": f"Another site's {story['headline']}"})
    other.run()
    # This site's preview folder now holds the other site's site and cache.
    for name in ("site", "cache"):
        target = preview.cache / PREVIEW / name
        target.rename(tmp_path / f"ours-{name}")
        (other.cache / PREVIEW / name).rename(target)
    preview.run()
    assert tree(preview.site) == preview.from_nothing()
    for state in (preview.cache / PREVIEW / "cache").glob("*.sqlite"):
        state.write_bytes(b"not a saved state at all" * 100)
    preview.run()
    assert tree(preview.site) == preview.from_nothing()


def test_a_half_written_folder_is_not_taken_for_the_saved_site(tmp_path: Path) -> None:
    preview = make_preview(tmp_path)
    preview.run()
    # What a preview killed in the middle of writing a save in place leaves: a page
    # already new, and no site id in the marker (written last).
    page = preview.site / "stories" / "2026-11-10" / "story-number-1" / "index.html"
    page.write_bytes(b"<p>half of a save</p>")
    marker = preview.site / MARKER
    marker.write_bytes(b"".join(line for line in marker.read_bytes().splitlines(True)
                                if not line.startswith(b"site-id: ")))
    preview.run()
    assert tree(preview.site) == preview.from_nothing()


def test_a_preview_starts_from_the_url_history_desk_build_would(tmp_path: Path) -> None:
    """Whatever its folder holds (another site's site, a corrupt cache beside its own
    site), a preview starts from the URL history the site's own build would, not from
    that of the site in its folder."""
    preview = make_preview(tmp_path)
    preview.run()
    config = preview.config(preview.base_url)
    # Story 3 moves, is published there by desk build, and moves again.
    moved = {**preview.stories[3], "slug": "published-in-between"}
    next(preview.content.rglob("story-number-3.json")).unlink()
    write_story(preview.content, moved)
    assert build(config, Clock(NOW)).ok
    next(preview.content.rglob("published-in-between.json")).unlink()
    write_story(preview.content, {**moved, "slug": "moved-again"})
    other = Preview(tmp_path / "other")  # another site's: this one's ids, other URLs
    other.port = preview.port
    for story in preview.stories:
        write_story(other.content, {**story, "slug": f"another-{story['slug']}"})
    other.run()
    site = preview.cache / PREVIEW / "site"
    shutil.rmtree(site)
    shutil.copytree(other.cache / PREVIEW / "site", site)
    preview.run()
    history, _ = remembered_history(config.cache_dir, config.output_dir)
    assert tree(preview.site) == preview.from_nothing(history)
    assert b"moved-again" in (preview.site / "stories" / str(moved["published_at"])[:10] /
                              "published-in-between" / "index.html").read_bytes()
    for state in (preview.cache / PREVIEW / "cache").glob("*.sqlite"):
        state.write_bytes(b"not a saved state at all" * 100)
    preview.run()
    assert tree(preview.site) == preview.from_nothing(history)


def test_a_first_preview_after_desk_build_takes_its_inspections(tmp_path: Path) -> None:
    """With no preview folder, a preview's start takes the inspections the site's own
    `desk build` saved: no file's own findings depend on the base URL (a story's own URLs
    are compared with the layout's by path), so the check keys agree, and the preview
    reads no story file to make its catalog. Its pages are what a build from nothing
    makes."""
    from desk.build.inspection import inspect_file
    from desk.build.keys import check_key
    from desk.content.loader import StoredTexts

    preview = make_preview(tmp_path)
    # Stories whose own URLs disagree with the layout: warnings either way.
    write_story(preview.content, {**preview.stories[1], "url": "https://elsewhere.example/x/"})
    write_story(preview.content, {**preview.stories[2],
                                  "url": "https://news.example.org/desk/stories/x/y/"})
    published = preview.config("https://news.example.org/desk")
    local = preview.config("http://127.0.0.1:8123").model_copy(update={"search": False})
    assert check_key(published) == check_key(local)
    files = sorted(str(p) for p in preview.content.rglob("*.json"))
    found = [inspect_file(path, published)[1] for path in files]
    assert found == [inspect_file(path, local)[1] for path in files]
    assert sum(1 for f in found if f) >= 2  # the two disagreements
    assert build(published, Clock(NOW)).ok
    dev = DevServer(preview.config, ("127.0.0.1", preview.port), NOW, False, lambda line: None)
    try:
        report = dev.rebuild("start")
        assert report is not None and report.ok
        preview.base_url = dev.base_url
        inspected = dev._cache.state.inspected  # noqa: SLF001 - what the start took
        taken = [r for r in inspected.values()
                 if r.story is not None and isinstance(r.story.summary.held_texts, StoredTexts)]
        assert len(taken) == len(files)
    finally:
        dev.stop()
    assert tree(preview.site) == preview.from_nothing()
