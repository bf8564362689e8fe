"""The index (desk.build.state): what is written is what is read back, whether written
whole or as what changed since it was read; a file of another version, or damaged, is no
index at all; the survey's query names the files to look at."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import sqlite3
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import feedparser
import pytest
from conftest import tree
from savedstate import execute, opened, state_files
from storygen import REPO, corpus_site, make_corpus, make_story, write_story

from desk.build import cache as cache_module
from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.build.records import FileRecord, Stat, UnitRecord
from desk.build.state import (
    SCHEMA,
    STATE_VERSION,
    IndexTexts,
    SavedState,
    read_state,
    unvouched,
    write_state,
)
from desk.build.writer import SiteRecord
from desk.config import load_config
from desk.content.catalog import Clock
from desk.content.digests import search_entry
from desk.content.findings import Finding
from desk.content.history import UrlHistory
from desk.content.loader import ContentChanged, LoadedStory, StoredTexts, Texts
from desk.content.models import Story
from desk.render import feeds
from desk.render.view import StoryView

NOW = datetime(2026, 11, 11, tzinfo=UTC)


def record(n: int, stat: int = 1, findings: tuple[Finding, ...] = ()) -> FileRecord:
    story = Story.model_validate(make_story(n))
    path = f"content/stories/story-{n}.json"
    return FileRecord(Stat(stat, 100 + n, 7 + n),
                      LoadedStory.of(path, story, f"{n:064x}", "b" * 40), findings, "b" * 40)


def unit(n: int, key: str = "k") -> tuple[str, UnitRecord]:
    folder = f"/stories/2026-11-10/story-{n}/"
    return folder, UnitRecord.of(folder, f"{key}{n}", tuple(folder[1:] + name for name in (
        "index.html", "index.md", "index.json")), f"{n:08x}")


def a_state() -> SavedState:
    problem = Finding("content/stories/story-3.json", "/dek", "dek-long", "too long", "warning",
                      3, 9)
    units = dict(unit(n) for n in range(6))
    units["/feed/"] = UnitRecord("f", ("feed.xml", "feed.json", "feed/index.html"))
    state = SavedState(site_id="s-1", units=units, loose=("robots.txt",), check_key="c",
                       inspected={r.story.path: r for r in  # type: ignore[union-attr]
                                  [record(n, findings=(problem,) if n == 3 else ())
                                   for n in range(6)]},
                       history=UrlHistory({"1": ("/stories/2026-11-09/a/",)}),
                       search={"s-0123456789abcdef": ("a", "b")},
                       media={"media/a.jpg": ["x", 1]},
                       keyed_under=("site", (("ai", "AI desk"),)), held=("/stories/x/",),
                       site_parts={"pages": "1" * 32, "stories-2026-11": "2" * 32})
    state.inspected["content/stories/broken.json"] = FileRecord(Stat(1, 2, 3), None, (problem,))
    state.spare = SiteRecord("s-0", {**units, "/old/": UnitRecord("o", ("old/index.html",))},
                             ("robots.txt",))
    del state.spare.units["/feed/"]  # type: ignore[attr-defined]
    return state


def same(a: SavedState, b: SavedState) -> bool:
    """Equal states, their spares too (what the writer needs of a spare's unit: its key
    and its files)."""
    assert a.spare is not None and b.spare is not None
    return (dataclasses.replace(a, spare=None) == dataclasses.replace(b, spare=None)
            and (a.spare.site_id, a.spare.loose) == (b.spare.site_id, b.spare.loose)
            and _spare_units(a.spare) == _spare_units(b.spare))


def _spare_units(spare: SiteRecord) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {k: (u.key, u.files) for k, u in spare.units.items()}


def test_an_index_reads_back_as_written(tmp_path: Path) -> None:
    state = a_state()
    write_state(state, tmp_path / "s.sqlite")
    assert same(read_state(tmp_path / "s.sqlite"), state)


def test_what_changed_since_the_index_was_read_is_what_is_written(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    inode = file.stat().st_ino
    state = read_state(file)
    for n in (1, 2):  # touched, not changed (a fresh checkout)
        path = f"content/stories/story-{n}.json"
        state.inspected[path] = state.inspected[path].restated(Stat(9, 9, n), "c" * 40)
    new = record(3, stat=5)  # changed: its findings are gone
    state.inspected[new.story.path] = new  # type: ignore[union-attr]
    state.inspected[record(8).story.path] = record(8)  # type: ignore[union-attr]
    del state.inspected["content/stories/story-4.json"]
    units = dict(state.units)
    units.update([unit(0, "new"), unit(9)])
    del units["/stories/2026-11-10/story-5/"]
    state.advance(state.site_id, units, ("robots.txt", "humans.txt"), "s-2")
    state.history = UrlHistory({"1": ("/stories/2026-11-09/a/", "/stories/2026-11-09/b/")})
    state.search = {}
    write_state(state, file)
    assert file.stat().st_ino == inode  # written in place: one transaction
    again = read_state(file)
    assert same(again, state)
    assert again.inspected["content/stories/story-3.json"].findings == ()
    # A restated inspection's row keeps its story; a dropped one takes its links along.
    assert execute(file, "UPDATE story SET headline = 'x' WHERE path = ?",
                   "content/stories/story-1.json") == 1
    assert execute(file, "DELETE FROM link WHERE story = ?", "content/stories/story-4.json") == 0
    write_state(again, file)  # nothing changed since it was read
    assert same(read_state(file), state)


def test_only_the_changed_records_of_last_publishes_are_written(tmp_path: Path) -> None:
    """An edited record is one row written, a story published between others one row
    more, a gone one a row deleted (an hour writes its few of 100,000): counted by
    triggers in the file. The records read back by id, in order, whatever order a
    build made them in."""
    def records(*ids: str, edited: str = "") -> dict[str, str]:
        return {i: f"{int(i):016x} {'e' * 16 if i == edited else '-'} 0" for i in ids}

    file = tmp_path / "s.sqlite"
    state = a_state()
    urls = {str(n): (f"/stories/2026-11-09/s{n}/",) for n in range(10)}
    state.history = UrlHistory(urls).published_as(records("3", "0", "1", "2"))
    write_state(state, file)
    with opened(file) as db:
        db.execute("CREATE TABLE written (id TEXT, how TEXT)")
        for how in ("INSERT", "UPDATE", "DELETE"):
            row = "old" if how == "DELETE" else "new"
            db.execute(f"CREATE TRIGGER {how.lower()}_counted AFTER {how} ON last_publish "
                       f"BEGIN INSERT INTO written VALUES ({row}.id, '{how}'); END")

    def written_since(state: SavedState, history: UrlHistory) -> list[tuple[str, str]]:
        execute(file, "DELETE FROM written")
        state.history = history
        write_state(state, file)
        with opened(file) as db:
            return sorted(db.execute("SELECT id, how FROM written"))

    state = read_state(file)
    assert state.history is not None
    assert list(state.history.published) == ["0", "1", "2", "3"]
    edited = state.history.published_as(records("3", "0", "1", "2", edited="1"))
    assert written_since(state, edited) == [("1", "INSERT")]
    again = read_state(file)
    assert again.history is not None and again.history.published == edited.published
    more = again.history.published_as(records("0", "9", "1", "3", edited="1"))
    assert written_since(again, more) == [("2", "DELETE"), ("9", "INSERT")]
    last = read_state(file).history
    assert last is not None
    assert list(last.published.items()) == sorted(more.published.items())


def test_the_texts_of_stories_read_back_stay_in_the_index_until_shown(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    written = a_state()
    write_state(written, file)
    state = read_state(file)
    path = "content/stories/story-2.json"
    summary = state.inspected[path].story.summary  # type: ignore[union-attr]
    assert isinstance(summary.held_texts, StoredTexts)  # not held in memory
    original = written.inspected[path].story.summary  # type: ignore[union-attr]
    assert isinstance(original.held_texts, Texts)
    assert summary == original and summary.related == original.related
    # In a forked process (a render worker), read through a connection of its own.
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(writer, state.inspected["content/stories/story-4.json"]
                 .story.summary.headline.encode())  # type: ignore[union-attr]
        os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    assert os.read(reader, 1000).decode() == written.inspected[
        "content/stories/story-4.json"].story.summary.headline  # type: ignore[union-attr]
    os.close(reader)
    # Another build changed the story's row meanwhile: not this story's texts any more.
    execute(file, "UPDATE story SET digest = '0' WHERE path = ?", "content/stories/story-5.json")
    with pytest.raises(ContentChanged):
        state.inspected["content/stories/story-5.json"].story.summary.dek  # type: ignore[union-attr]  # noqa: B018


def test_a_list_page_reads_each_story_s_texts_from_the_index_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each text read alone is a query of the index: a card that read its headline, dek,
    # angle... one by one made ten queries a story (0.4 s of an hour at 10,000 stories).
    content, stories, config = corpus_site(tmp_path, 12)
    assert build(config, Clock(NOW)).ok
    reads: Counter[str] = Counter()
    read = IndexTexts.texts

    def counted(self: IndexTexts, path: str, digest: str) -> Texts:
        reads[Path(path).stem] += 1
        return read(self, path, digest)

    monkeypatch.setattr(IndexTexts, "texts", counted)
    write_story(content, make_story(12, "climate", datetime(2026, 11, 10, 9, 30, tzinfo=UTC)))
    assert build(config, Clock(NOW)).ok  # the lists it joins made again, from the index
    site = tmp_path / "site"
    shown = [f.read_text(encoding="utf-8") for f in site.rglob("*")
             if f.suffix in (".html", ".txt", ".xml") and "/stories/" not in f.as_posix()]
    assert len(reads) == len(stories)  # every story listed beside the new one
    for data in stories:
        headline = re.compile(re.escape(data["headline"]) + r"(?!\d)")
        pages = sum(1 for text in shown if headline.search(text))
        assert 0 < reads[data["slug"]] <= pages, data["slug"]


def test_a_changed_feed_takes_its_other_entries_from_the_index(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A feed that a new story joins shows the latest stories in full: each entry was made
    # from its story file again (a third of an hour's render stage at 10,000 stories).
    content, stories, config = corpus_site(tmp_path, 12, feed_size=2)
    assert build(config, Clock(NOW)).ok
    made: Counter[str] = Counter()
    view = feeds.story_view

    def counted(story: Story, *args: object, **kwargs: object) -> StoryView:
        made[story.slug] += 1
        return view(story, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(feeds, "story_view", counted)
    new = make_story(12, "climate", datetime(2026, 11, 10, 9, 30, tzinfo=UTC))
    write_story(content, new)
    assert build(config, Clock(NOW)).ok
    assert made == Counter()  # the new story's entry was made as its page rendered
    feed = feedparser.parse((tmp_path / "site/feed.xml").read_bytes())
    newest = sorted([*stories, new], key=lambda s: s["published_at"], reverse=True)[:2]
    assert [e.title for e in feed.entries] == [s["headline"] for s in newest]
    # The index keeps the entries of the stories some feed carries, and no others.
    (index,) = state_files(tmp_path / "cache")
    with opened(index) as db:
        kept = {k for (k,) in db.execute("SELECT key FROM feed_entry")}
        carried = {k for (k,) in db.execute(
            "SELECT unit.key FROM unit JOIN story ON unit.id = story.url_path")}
    assert kept < carried
    members = {e.link for rss in (tmp_path / "site").rglob("feed.xml")
               for e in feedparser.parse(rss.read_bytes()).entries}
    assert len(members) > 2
    assert len(kept) == len(members)


def test_a_feed_entry_the_index_names_but_cannot_give_is_made_from_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, _, config = corpus_site(tmp_path, 12, feed_size=2)
    assert build(config, Clock(NOW)).ok
    (index,) = state_files(tmp_path / "cache")

    def rows_gone_after_the_read(path: Path, *args: Any, **kwargs: Any) -> SavedState:
        state = read_state(path, *args, **kwargs)
        execute(index, "DELETE FROM feed_entry")  # its keys were read: the rows are not
        return state

    monkeypatch.setattr(cache_module, "read_state", rows_gone_after_the_read)
    write_story(content, make_story(12, "climate", datetime(2026, 11, 10, 9, 30, tzinfo=UTC)))
    assert build(config, Clock(NOW)).ok
    monkeypatch.undo()
    fresh = config.model_copy(update={"output_dir": tmp_path / "fresh"})
    assert build(fresh, Clock(NOW), cache=BuildCache()).ok
    assert tree(tmp_path / "site") == tree(tmp_path / "fresh")


def test_a_damaged_index_or_one_of_another_version_is_none(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    whole = file.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"", b"not a database" * 100):
        file.write_bytes(damaged)
        assert read_state(file) == SavedState()
    # Another version; a unit outside the site, or with no usual count of files; a
    # search bundle naming a folder that is not one; a history path outside the site.
    for damage in (f"UPDATE setting SET value = '{STATE_VERSION - 1}' WHERE name = 'version'",
                   "UPDATE unit SET id = '/../x/' WHERE id = '/stories/2026-11-10/story-1/'",
                   "UPDATE unit SET usual = 7 WHERE usual = 3",
                   "UPDATE unit SET files = '[\"../etc/passwd\"]' WHERE id = '/feed/'",
                   "UPDATE search_entry SET bundle = '../../etc'",
                   "UPDATE url_history SET path = '/../../x/'"):
        file.write_bytes(whole)
        with contextlib.closing(sqlite3.connect(file)) as db, db:
            assert db.execute(damage).rowcount > 0, damage
        assert read_state(file) == SavedState(), damage
    assert read_state(tmp_path / "none.sqlite") == SavedState()
    # A build writes an index of another version whole, anew.
    file.write_bytes(whole)
    execute(file, "UPDATE setting SET value = '0' WHERE name = 'version'")
    write_state(a_state(), file)
    assert same(read_state(file), a_state())


def test_the_schema_version_names_one_schema() -> None:
    """Changing the tables means a new STATE_VERSION (an index of the old one is then
    written anew): update the pair below together."""
    assert (STATE_VERSION, hashlib.sha256(SCHEMA.encode()).hexdigest()[:16]) == (
        22, "044c38a847088da9")


def test_a_story_holding_every_kind_of_value_reads_back_as_inspected(tmp_path: Path) -> None:
    """A story's rows: corrections (so a modification that is not the publication),
    images, related links, a beat and an agent read back as the story inspected; a
    story with none of them too."""
    data = {**make_story(7), "beat": "chips",
            "writer": {"agent": "scout", "run_id": "run-7"},
            "corrections": [{"at": "2026-11-15T09:30:00+02:00", "text": "A correction."}],
            "images": [{"url": "https://img.example/7.png", "alt": "Seven"}],
            "related": [{"url": "https://hangingcontext.com/stories/2026-11-13/one/",
                         "headline": "One"}]}
    full = LoadedStory.of("content/stories/full.json", Story.model_validate(data), "7" * 64)
    plain = record(8).story
    assert plain is not None
    state = SavedState(inspected={item.path: FileRecord(Stat(1, 2, n), item, ())
                                  for n, item in enumerate((full, plain))})
    write_state(state, tmp_path / "s.sqlite")
    read = read_state(tmp_path / "s.sqlite")
    for item in (full, plain):
        found = read.inspected[item.path].story
        assert found is not None and found == item
        assert found.summary._compared() == item.summary._compared()
        assert found.search_entry == search_entry(item.url_path, item.digest)
    summary = read.inspected[full.path].story.summary  # type: ignore[union-attr]
    assert summary.modified_at == datetime(2026, 11, 15, 7, 30, tzinfo=UTC)
    assert summary.modified_at.utcoffset() is not None and summary.corrections
    assert summary.images and summary.related_urls and summary.agent == "scout"
    assert summary.related == (("https://hangingcontext.com/stories/2026-11-13/one/", "One"),)


def test_the_survey_s_query_names_the_files_to_look_at(tmp_path: Path) -> None:
    """Same stat: vouched. Another stat: vouched only by git's blob id of a story at the
    same size. Not in the index, or no stat: looked at."""
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    path = "content/stories/story-{}.json".format
    stats: dict[str, Stat | None] = {path(n): Stat(1, 100 + n, 7 + n) for n in range(6)}
    stats[path(1)] = Stat(5, 101, 0)  # touched, git holds it unchanged
    stats[path(2)] = Stat(5, 102, 0)  # touched, git not asked
    stats[path(3)] = Stat(5, 999, 0)  # another size
    stats[path(4)] = None
    stats["content/stories/broken.json"] = Stat(9, 2, 3)  # touched, no story: looked at
    stats[path(9)] = Stat(1, 1, 1)  # new
    clean = {path(1): "b" * 40, path(3): "b" * 40, "content/stories/broken.json": ""}
    assert unvouched(file, stats, clean) == {path(2), path(3), path(4), path(9),
                                             "content/stories/broken.json"}
    assert unvouched(file, stats, None) == {path(1), path(2), path(3), path(4), path(9),
                                            "content/stories/broken.json"}
    assert unvouched(tmp_path / "none.sqlite", stats, None) is None


def test_old_indexes_are_pruned(tmp_path: Path) -> None:
    for n in range(25):
        write_state(SavedState(site_id=f"s-{n}"), tmp_path / f"site{n}.sqlite")
    files = state_files(tmp_path)
    assert len(files) == 20 and tmp_path / "site24.sqlite" in files


def test_the_index_forgets_files_no_longer_in_the_content(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 4)
    config = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
        "output_dir": tmp_path / "site"})
    assert build(config, Clock(NOW)).ok
    (state_file,) = state_files(tmp_path / "cache")
    gone = sorted(read_state(state_file).inspected)[0]
    Path(gone).unlink()
    assert build(config, Clock(NOW)).ok
    kept = read_state(state_file).inspected
    assert len(kept) == 3 and gone not in kept
    # The rows follow the records: no story row of a file gone.
    with contextlib.closing(sqlite3.connect(state_file)) as db:
        assert db.execute("SELECT count(*) FROM story").fetchone() == (3,)


def test_a_state_that_took_another_s_inspections_writes_them(tmp_path: Path) -> None:
    site = tmp_path / "site.sqlite"
    write_state(a_state(), site)
    preview = SavedState()
    preview.adopt_inspections(read_state(site))
    write_state(preview, tmp_path / "preview.sqlite")
    read = read_state(tmp_path / "preview.sqlite")
    assert {p: (r.stat, r.story, r.findings, r.blob) for p, r in read.inspected.items()} == {
        p: (r.stat, r.story, r.findings, r.blob) for p, r in a_state().inspected.items()}
