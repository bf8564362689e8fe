"""The saved state's file (desk.build.state): what is written is what is read back, whether
written whole or as the difference from the state read; a file that is not the one a
state was read from is written whole; a damaged file is no state at all."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from savedstate import state_files
from storygen import REPO, make_corpus, make_story

from desk.build.cache import BuildCache, InspectionCache
from desk.build.ledger import Ledger
from desk.build.pipeline import build
from desk.build.records import FileRecord, UnitRecord, packed_stat, stat_values
from desk.build.slots import slot_maker
from desk.build.state import (
    SPARE_STRINGS,
    Difference,
    SavedState,
    StateFile,
    Stored,
    _spare_difference,
    read_state,
    unvouched,
    write_state,
)
from desk.build.writer import SiteRecord, spare_path
from desk.config import load_config
from desk.content.catalog import Clock
from desk.content.digests import search_entry
from desk.content.findings import Finding
from desk.content.history import UrlHistory
from desk.content.loader import ContentChanged, LoadedStory, StoredTexts, Texts
from desk.content.models import Story

NOW = datetime(2026, 11, 11, tzinfo=UTC)


def record(n: int, stat: int = 1, findings: tuple[Finding, ...] = ()) -> FileRecord:
    story = Story.model_validate(make_story(n))
    path = f"content/stories/story-{n}.json"
    return FileRecord(packed_stat(stat, 100 + n, 7 + n),
                      LoadedStory.of(path, story, f"{n:064x}", "b" * 40), findings, "b" * 40)


def unit(n: int, key: str = "k") -> tuple[str, UnitRecord]:
    folder = f"/stories/2026-11-10/story-{n}/"
    return folder, UnitRecord(f"{key}{n}", tuple(folder[1:] + name for name in (
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
                       site_parts={"pages": "1" * 32, "stories-2026-11": "2" * 32})
    state.inspected["content/stories/broken.json"] = FileRecord(packed_stat(1, 2, 3), None, (problem,))
    state.spare = SiteRecord("s-0", {**units, "/old/": UnitRecord("o", ("old/index.html",))},
                        ("robots.txt",))
    return state


def same(a: SavedState, b: SavedState) -> bool:
    """Equal states, their spares too (what the writer needs of a spare's unit: its key
    and its files)."""
    assert a.spare is not None and b.spare is not None
    return (dataclasses.replace(a, spare=None, inspected={})
            == dataclasses.replace(b, spare=None, inspected={})
            and inspections(a) == inspections(b)
            and (a.spare.site_id, a.spare.loose) == (b.spare.site_id, b.spare.loose)
            and _spare_units(a.spare) == _spare_units(b.spare))


def inspections(state: SavedState) -> dict[str, tuple[Any, ...]]:
    """What each inspection holds, its stat and blob id read from the state's file when
    they were left there."""
    return {path: (*record.stated(path), record.story, record.findings)
            for path, record in state.inspected.items()}


def _spare_units(spare: SiteRecord) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {k: (u.key, u.files) for k, u in spare.units.items()}


def test_a_state_reads_back_as_written(tmp_path: Path) -> None:
    state = a_state()
    write_state(state, tmp_path / "s.sqlite")
    assert same(read_state(tmp_path / "s.sqlite"), state)


def test_the_difference_from_the_state_read_is_what_is_written(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    inode = file.stat().st_ino
    state = read_state(file)
    for n in (1, 2):  # touched, not changed (a fresh checkout)
        path = f"content/stories/story-{n}.json"
        state.inspected[path] = state.inspected[path].restated(packed_stat(9, 9, n), "c" * 40)
    new = record(3, stat=5)  # changed: its findings are gone
    state.inspected[new.story.path] = new  # type: ignore[union-attr]
    state.inspected[record(8).story.path] = record(8)  # type: ignore[union-attr]
    del state.inspected["content/stories/story-4.json"]
    units = dict(state.units)
    units.update([unit(0, "new"), unit(9)])
    del units["/stories/2026-11-10/story-5/"]
    state.advance(state.site_id, units, ("robots.txt", "humans.txt"), "s-2")
    write_state(state, file)
    assert file.stat().st_ino == inode  # written in place: only the difference
    again = read_state(file)
    assert same(again, state)
    assert again.inspected["content/stories/story-3.json"].findings == ()
    write_state(again, file)  # nothing changed since it was read
    assert same(read_state(file), state)


def test_a_state_written_again_rewrites_only_what_changed_since(tmp_path: Path) -> None:
    """As desk serve writes one state after every save: what a write put in the file is
    not written again by the next (each row is marked, and a row written again loses
    its mark: findings none of them has, which read as none)."""
    file, state = tmp_path / "s.sqlite", a_state()
    write_state(state, file)  # whole: every record was new
    with sqlite3.connect(file) as db:
        db.execute("UPDATE inspected SET findings = '[]'")
    db.close()
    path = "content/stories/story-2.json"
    state.inspected[path] = state.inspected[path].restated(packed_stat(9, 9, 9), "c" * 40)
    state.inspected[record(7).story.path] = record(7, stat=3)  # type: ignore[union-attr]
    write_state(state, file)
    with sqlite3.connect(file) as db:
        unmarked = {p for p, f in db.execute("SELECT path, findings FROM inspected")
                    if f != "[]"}
    db.close()
    # The restated record is updated in place (its stat and blob id only).
    assert unmarked == {"content/stories/story-7.json"}


def test_a_file_written_since_the_state_was_read_is_written_whole(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    first, second = read_state(file), read_state(file)
    del first.inspected["content/stories/story-1.json"]
    first.units.update([unit(7)])
    write_state(first, file)
    second.inspected[record(8).story.path] = record(8)  # type: ignore[union-attr]
    inode = file.stat().st_ino
    write_state(second, file)
    assert file.stat().st_ino != inode  # a new file, moved into place
    again = read_state(file)
    assert same(again, second)
    # Its texts were left in the file, whose row the first write deleted: inspected again.
    assert "content/stories/story-1.json" not in again.inspected
    assert "content/stories/story-2.json" in again.inspected
    assert "/stories/2026-11-10/story-7/" not in again.units


def test_the_texts_of_stories_read_back_stay_in_the_file_until_shown(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    written = a_state()
    write_state(written, file)
    state = read_state(file)
    path = "content/stories/story-2.json"
    summary = state.inspected[path].story.summary  # type: ignore[union-attr]
    assert isinstance(summary.held_texts, StoredTexts)  # not held in memory
    original = written.inspected[path].story.summary  # type: ignore[union-attr]
    assert isinstance(original.held_texts, Texts)
    assert (summary.headline, summary.dek, summary.slug) == (
        original.headline, original.dek, original.slug)
    assert summary == original
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
    with sqlite3.connect(file) as db:
        db.execute("UPDATE inspected SET texts = NULL WHERE path = ?",
                   ("content/stories/story-5.json",))
    db.close()
    with pytest.raises(ContentChanged):
        state.inspected["content/stories/story-5.json"].story.summary.dek  # type: ignore[union-attr]  # noqa: B018


@pytest.mark.parametrize("single", [0, StateFile.SINGLE_STATS])
def test_an_inspection_read_back_reads_its_stat_and_blob_id_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, single: int) -> None:
    """A record read with the state leaves its stat and blob id in the file: asked for
    (row by row, or all at once past `single`), they are the ones written, and a state
    written whole from it (into another file) writes them again. A file whose row has
    gone from the state's file since, or whose row holds another version of it, is looked
    at again."""
    monkeypatch.setattr(StateFile, "SINGLE_STATS", single)
    state, file = a_state(), tmp_path / "s.sqlite"
    write_state(state, file)
    read = read_state(file)
    assert not any(isinstance(r.held_stat, int) for r in read.inspected.values())
    assert inspections(read) == inspections(state)
    # Read at once (past `single`), each is set in its record: held as before it was left.
    assert all(isinstance(r.held_stat, int) for r in read.inspected.values()) == (single == 0)
    write_state(read, tmp_path / "t.sqlite")  # not the file it was read from: whole
    assert inspections(read_state(tmp_path / "t.sqlite")) == inspections(state)

    # Rewritten since by another build: one file's row gone, another's of a new version
    # (its stat told, as the other build inspected it).
    fresh, gone, other = (read_state(file), "content/stories/story-1.json",
                          "content/stories/story-3.json")
    digest = fresh.inspected[other].story.digest  # type: ignore[union-attr]
    with contextlib.closing(sqlite3.connect(file)) as db, db:
        db.execute("DELETE FROM inspected WHERE path = ?", (gone,))
        (story,) = db.execute("SELECT story FROM inspected WHERE path = ?", (other,)).fetchone()
        db.execute("UPDATE inspected SET story = ?, mtime = mtime + 1 WHERE path = ?",
                   (story.replace(digest.encode(), b"f" * 64), other))
    cache = InspectionCache(fresh, fresh.check_key)
    kept = "content/stories/story-2.json"
    assert cache.recall(kept, state.inspected[kept].stated(kept)[0]) is not None
    assert cache.recall(gone, state.inspected[gone].stated(gone)[0]) is None
    mtime, size, ino = stat_values(state.inspected[other].stated(other)[0])
    assert cache.recall(other, packed_stat(mtime + 1, size, ino)) is None
    # Written whole (into another file), those two are left out, to be inspected again.
    paths = set(fresh.inspected)
    write_state(fresh, tmp_path / "u.sqlite")
    assert set(read_state(tmp_path / "u.sqlite").inspected) == paths - {gone, other}


def test_the_digests_of_units_read_back_stay_in_the_file_until_asked(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    written = a_state()
    write_state(written, file)
    state = read_state(file)
    unit_2, unit_4 = "/stories/2026-11-10/story-2/", "/stories/2026-11-10/story-4/"
    assert not isinstance(state.units[unit_2].held_digest, str)  # not held in memory
    assert state.units[unit_2].json_digest == written.units[unit_2].json_digest == "00000002"
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(writer, state.units[unit_4].json_digest.encode())
        os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    assert os.read(reader, 1000).decode() == "00000004"  # through a connection of its own
    os.close(reader)
    # Another build rendered the unit again meanwhile: its digest is not this key's.
    with sqlite3.connect(file) as db:
        db.execute("UPDATE units SET key = 'other', json_digest = 'ff' WHERE id = ?", (unit_2,))
    db.close()
    with pytest.raises(ContentChanged):
        state.units[unit_2].json_digest  # noqa: B018


def test_a_damaged_state_is_no_state(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    whole = file.read_bytes()
    for damaged in (whole[: len(whole) // 2], b"", b"not a database" * 100,
                    whole[:100] + bytes(200) + whole[300:]):
        file.write_bytes(damaged)
        assert read_state(file) == SavedState()
    # A unit's row lost, or the unit log's rows, the count kept; a unit cut from a row's
    # ids, or from those with other files; a count of usual files that is none. An
    # inspection's row lost, or the record log's; an inspection with no story cut from
    # its row.
    for damage in ("DELETE FROM units WHERE id = '/feed/'", "DELETE FROM unit_log",
                   "DELETE FROM inspected WHERE path = 'content/stories/broken.json'",
                   "DELETE FROM record_log", "UPDATE record_log SET others = '[]'",
                   "UPDATE unit_log SET ids = substr(ids, instr(ids, char(10)) + 1)",
                   "UPDATE unit_log SET odd = '{}'",
                   "UPDATE unit_log SET usual = X'0B' || substr(usual, 2)"):
        file.write_bytes(whole)
        with contextlib.closing(sqlite3.connect(file)) as db, db:
            assert db.execute(damage).rowcount > 0
        assert read_state(file) == SavedState()
    assert read_state(tmp_path / "none.sqlite") == SavedState()
    # A story's newsroom not a number of the string table, or one past its end; a
    # string's row lost, the count kept; a story's id cut from its row of the record log.
    for damage in ("newsroom", "number", "string", "id"):
        write_state(a_state(), file)
        with contextlib.closing(sqlite3.connect(file)) as db, db:
            (stories,) = db.execute("SELECT stories FROM record_log").fetchone()
            columns = json.loads(stories)  # paths, findings, then the records' values
            newsrooms = columns[2 + 4]
            newsrooms[0] = {"newsroom": "ai", "number": 10_000}.get(damage, newsrooms[0])
            if damage == "id":
                del columns[2 + 3][-1]
            db.execute("UPDATE record_log SET stories = ?", (json.dumps(columns),))
            if damage == "string":
                (chunk,) = db.execute("SELECT texts FROM strings ORDER BY n DESC").fetchone()
                db.execute("UPDATE strings SET texts = ? WHERE n = (SELECT max(n) FROM strings)",
                           (json.dumps(json.loads(chunk)[:-1]),))  # its last string gone
        assert read_state(file) == SavedState()


def test_a_story_s_search_entry_is_one_string_with_a_sealed_bundle_s(tmp_path: Path) -> None:
    """The sealed bundles name the entries of the stories they hold: read back, each is
    the string the story's record holds, not a second one (100,000 of them at 100,000
    stories); an entry of no story read back is read as it is."""
    state = a_state()
    entries = [r.story.search_entry for r in state.inspected.values() if r.story is not None]
    state.search = {"s-0123456789abcdef": (*entries[:4], "feedfacecafe")}
    write_state(state, tmp_path / "s.sqlite")
    read = read_state(tmp_path / "s.sqlite")
    assert same(read, state)
    sealed = read.search["s-0123456789abcdef"]
    held = {r.story.search_entry: r.story.search_entry
            for r in read.inspected.values() if r.story is not None}
    assert len(held) == len(entries) and all(held[e] is e for e in sealed[:4])
    assert sealed[4] == "feedfacecafe" and sealed[4] not in held


def test_old_states_are_pruned(tmp_path: Path) -> None:
    for n in range(25):
        write_state(SavedState(site_id=f"s-{n}"), tmp_path / f"site{n}.sqlite")
    files = state_files(tmp_path)
    assert len(files) == 20 and tmp_path / "site24.sqlite" in files


def test_the_state_forgets_files_no_longer_in_the_content(tmp_path: Path) -> None:
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


@given(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_a_stat_packed_in_one_int_unpacks_to_its_values(mtime: int, size: int, ino: int) -> None:
    # One int per story file in memory; the inspection compares them whole.
    assert stat_values(packed_stat(mtime, size, ino)) == (mtime, size, ino)


def test_a_state_read_for_a_site_with_no_spare_folder_leaves_the_spare_out(
        tmp_path: Path) -> None:
    # A fresh runner has no spare folder: what the state knows of one is not read.
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    whole, without = read_state(file), read_state(file, spare=False)
    assert whole.spare is not None and without.spare is None
    assert dataclasses.replace(without, spare=None, inspected={}) == dataclasses.replace(
        whole, spare=None, inspected={})
    assert inspections(without) == inspections(whole)
    out_dir, cache_dir = tmp_path / "public", tmp_path / "cache"
    file = BuildCache.saved_for(cache_dir, out_dir).file
    assert file is not None
    write_state(a_state(), file)
    assert BuildCache.saved_for(cache_dir, out_dir).state.spare is None
    spare_path(out_dir).mkdir()
    assert BuildCache.saved_for(cache_dir, out_dir).state.spare is not None



def test_a_state_read_without_its_records_is_its_site_and_history(tmp_path: Path) -> None:
    # What a preview with inspections of its own reads of the site's build state: the
    # URL history to start from (and what site it describes), not 155,000 records.
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    whole, bare = read_state(file), read_state(file, spare=False, records=False)
    assert bare.inspected == {} and bare.units == {} and bare.spare is None
    assert (bare.site_id, bare.history, bare.check_key) == (
        whole.site_id, whole.history, whole.check_key)
    assert dataclasses.replace(bare, spare=None, inspected={}, units={}) == dataclasses.replace(
        whole, spare=None, inspected={}, units={})
    out_dir, cache_dir = tmp_path / "public", tmp_path / "cache"
    saved = BuildCache.saved_for(cache_dir, out_dir).file
    assert saved is not None
    write_state(a_state(), saved)
    spare_path(out_dir).mkdir()
    found = BuildCache.saved_for(cache_dir, out_dir, records=False)
    assert found.state.inspected == {} and found.state.spare is None
    assert found.recall_history(out_dir) == (whole.history, [])


def test_a_large_difference_is_written_without_waiting_on_its_own_lock(tmp_path: Path) -> None:
    """A difference larger than SQLite's page cache makes the write take the file's
    exclusive lock before it commits; what the write takes from the file itself (texts
    and index.json digests left there) is read before, never through the reading
    connection meanwhile: that read waited five seconds on the lock and gave the whole
    save up (desk serve's saves at 100,000 stories then rewrote every row each time)."""
    file = tmp_path / "s.sqlite"
    state = a_state()
    filler = "x" * 3000
    # About 9 MB of rows, written before the stories' rows: past the cache's 2 MB.
    state.inspected = {**{f"content/stories/filler-{n}.json": FileRecord(
        packed_stat(1, 2, n), None, (Finding(f"f{n}", "", "code", filler),))
        for n in range(3000)}, **state.inspected}
    write_state(state, file)
    state = read_state(file)
    for path, found in list(state.inspected.items()):  # every row new, texts left in the file
        stat, blob = found.stated(path)
        state.inspected[path] = FileRecord(stat + 1, found.story, found.findings, blob)
    kept = "/stories/2026-11-10/story-2/"
    old = state.units[kept]
    left = old.held_digest
    assert not isinstance(left, str)
    units = dict(state.units)  # a new record of a unit, its digest still left in the file
    units[kept] = UnitRecord(old.key, 3, left, kept)
    state.advance(state.site_id, units, state.loose, "s-9")
    write_state(state, file)
    again = read_state(file)
    assert again.site_id == "s-9"  # saved, not given up
    assert again.units[kept].json_digest == "00000002"
    story = again.inspected["content/stories/story-2.json"].story
    assert story is not None and story.summary.headline == state.inspected[
        "content/stories/story-2.json"].story.summary.headline  # type: ignore[union-attr]


def test_a_state_naming_a_unit_outside_the_site_is_no_state(tmp_path: Path) -> None:
    file = tmp_path / "s.sqlite"
    for bad in ("/stories/../../", "/a/./", "//", "/a\\b/", "stories/x/", "/x"):
        write_state(a_state(), file)
        with contextlib.closing(sqlite3.connect(file)) as db, db:  # a folder of usual files
            assert db.execute("UPDATE unit_log SET ids = replace(ids, ?, ?)",
                              ("/stories/2026-11-10/story-1/", bad)).rowcount == 1
        assert read_state(file) == SavedState(), bad
    for name in ("../up.xml", "a/../../up.xml", "a\\b.xml"):
        write_state(a_state(), file)
        with contextlib.closing(sqlite3.connect(file)) as db, db:  # a unit's listed files
            (odd,) = db.execute("SELECT odd FROM unit_log").fetchone()
            units = json.loads(odd)
            units["/feed/"][1] = ["feed.xml", name]
            db.execute("UPDATE unit_log SET odd = ?", (json.dumps(units).encode(),))
        assert read_state(file) == SavedState(), name


def test_records_made_slot_by_slot_are_those_init_makes() -> None:
    made = record(4)
    story = made.story
    assert story is not None
    summary = story.summary
    fields = [getattr(summary, f.name) for f in dataclasses.fields(summary)]
    again = slot_maker(type(summary))(*fields)
    assert again == summary and again._compared() == summary._compared()
    loaded = slot_maker(LoadedStory)(*(getattr(story, f.name)
                                       for f in dataclasses.fields(story)))
    assert loaded == story and hash(loaded) == hash(story)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.digest = "x"  # type: ignore[misc]
    for not_made in (SiteRecord, Finding, UnitRecord):  # plain; frozen without slots; no dataclass
        with pytest.raises(TypeError):
            slot_maker(not_made)


@given(st.sets(st.integers(0, 30)), st.sets(st.integers(0, 30)), st.sets(st.integers(0, 30)))
def test_the_spare_told_from_the_replaced_units_is_the_spare_told_in_full(
        kept: set[int], renewed: set[int], added: set[int]) -> None:
    """An hourly build's spare is the site read with the state: its units that differ from
    the new site's, and the new site's units it lacks, are told from the units the build
    replaced, as a pass over every unit of both tells them."""
    before = dict(unit(n) for n in kept | renewed)
    state = SavedState(units=before)
    state.stored = Stored(Path("s.sqlite"), "g", before)
    units = {**{folder: before[folder] for n in kept if n % 3 for folder in [unit(n)[0]]},
             **dict(unit(n, "new") for n in renewed), **dict(unit(100 + n) for n in added)}
    state.units = units
    replaced = [k for k, u in units.items() if before.get(k) is not u]
    told = Difference([], {}, replaced, sorted(before.keys() - units.keys()))
    fast = _spare_difference(before, state, told)
    full = _spare_difference(before, state, None)
    assert sorted(fast[0]) == sorted(full[0]) and fast[1] == full[1]


@given(st.lists(st.tuples(st.integers(0, 30), st.sampled_from("cmrhx")), max_size=60),
       st.sets(st.integers(0, 30)), st.sets(st.integers(0, 30)))
def test_a_ledger_tells_the_units_it_replaced_and_dropped_as_a_pass_over_every_unit_does(
        steps: list[tuple[int, str]], left: set[int], refused: set[int]) -> None:
    """What a build did to the last build's units, as its ledger tells it from the units
    it recorded anew (the difference write of the state and the site id take it instead
    of a pass over each of 155,000 units): the units whose records are not the very ones
    the last build left, and those it left that this build did not record. The writer
    refuses to keep some units' files (they are then rendered anew or dropped)."""
    previous = dict(unit(n) for n in left)
    refuses = {unit(n)[0] for n in refused}

    class Writer:  # what the ledger asks of the site writer, refusing `refuses`
        def keep(self, unit_id: str, record: UnitRecord) -> bool:
            return unit_id not in refuses

        def keep_many(self, records: Mapping[str, UnitRecord]) -> set[str]:
            return {unit_id for unit_id in records if unit_id in refuses}

    ledger = Ledger(previous, Writer())
    for n, step in steps:
        folder = unit(n)[0]
        if step == "c":
            ledger.carry(folder)
        elif step == "m":
            ledger.carry_many([folder])
        elif step == "r":
            ledger.record_files(folder, f"new{n}", ())
        elif step == "h":
            ledger.hold(folder, f"held{n}", (), "")
    changes, units = ledger.changes(), ledger.units
    assert changes.base is previous
    assert sorted(changes.replaced) == sorted(
        k for k, record in units.items() if previous.get(k) is not record)
    assert len(changes.replaced) == len(set(changes.replaced))
    assert changes.dropped == sorted(previous.keys() - units.keys())


def test_related_links_read_back_hold_their_urls_once_and_their_headlines_in_the_file(
        tmp_path: Path) -> None:
    target = "https://hangingcontext.com/stories/2026-11-10/story-number-1/"
    state = SavedState(check_key="c")
    for n in (2, 3):
        story = Story.model_validate(make_story(n, related=[
            {"url": target, "headline": f"Read {n} first", "slug": "story-number-1"},
            {"url": "https://example.org/elsewhere", "headline": "", "slug": "x"}]))
        path = f"content/stories/story-{n}.json"
        state.inspected[path] = FileRecord(packed_stat(n, n, n),
                                           LoadedStory.of(path, story, f"{n:064x}"), ())
    write_state(state, tmp_path / "s.sqlite")
    read = read_state(tmp_path / "s.sqlite")
    two, three = (read.inspected[f"content/stories/story-{n}.json"].story.summary  # type: ignore[union-attr]
                  for n in (2, 3))
    assert isinstance(two.held_texts, StoredTexts)  # the headlines are not held
    assert two.related_urls[0] is three.related_urls[0]  # one string for a URL
    assert two.related == ((target, "Read 2 first"), ("https://example.org/elsewhere", ""))
    assert three == state.inspected["content/stories/story-3.json"].story.summary  # type: ignore[union-attr]


def shared_strings(file: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(file)) as db:
        return [text for (chunk,) in db.execute("SELECT texts FROM strings ORDER BY n")
                for text in json.loads(chunk)]


@pytest.mark.parametrize("per", [1, 2, 3, 1000])
def test_strings_added_in_chunks_read_back_by_their_numbers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, per: int) -> None:
    """The string table in chunks of `per` (the last one rewritten as strings are added
    to it) reads back string by string; a chunk missing, cut short, or not an array of
    strings makes no state."""
    monkeypatch.setattr("desk.build.state.STRINGS_PER_CHUNK", per)
    file = tmp_path / "s.sqlite"
    state = a_state()
    write_state(state, file)
    for n in range(6, 9):  # three builds in turn, each adding a story and its strings
        state = read_state(file)
        added = record(n)
        assert added.story is not None
        state.inspected[added.story.path] = dataclasses.replace(
            added, story=dataclasses.replace(added.story, summary=dataclasses.replace(
                added.story.summary, newsroom=f"room-{n}", edition=f"2026-11-1{n}T0{n}")))
        write_state(state, file)
    read = read_state(file)
    assert inspections(read) == inspections(state)
    assert {r.story.summary.newsroom for r in read.inspected.values() if r.story} >= {
        "room-6", "room-7", "room-8"}
    for damage in ("missing", "short", "not strings"):
        broken = tmp_path / f"{damage}.sqlite"
        broken.write_bytes(file.read_bytes())
        with contextlib.closing(sqlite3.connect(broken)) as db, db:
            if damage == "missing":
                db.execute("DELETE FROM strings WHERE n = 0")
            elif damage == "short":
                db.execute("UPDATE strings SET texts = '[]' WHERE n = 0")
            else:
                db.execute("UPDATE strings SET texts = '{}' WHERE n = 0")
        assert read_state(broken) == SavedState()


def test_the_strings_stories_share_are_kept_once_and_keep_their_numbers(tmp_path: Path
                                                                        ) -> None:
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    first = shared_strings(file)
    # Six stories of one newsroom: its name and title once each, in a table of few rows.
    assert first.count("artificial-intelligence") == 1 and len(first) == len(set(first))
    assert len(first) < 20
    state = read_state(file)
    moved = Story.model_validate({**make_story(8), "newsroom": "climate",
                                  "newsroom_title": "Climate"})
    path = "content/stories/story-8.json"
    state.inspected[path] = FileRecord(packed_stat(8, 8, 8),
                                       LoadedStory.of(path, moved, "8" * 64), ())
    inode = file.stat().st_ino
    write_state(state, file)
    assert file.stat().st_ino == inode  # the difference: new strings added at the end
    assert shared_strings(file) == [*first, "climate", "Climate"]
    again = read_state(file)
    assert same(again, state)
    assert again.inspected[path].story.summary.newsroom == "climate"  # type: ignore[union-attr]
    write_state(again, file)  # nothing new: no string added
    assert shared_strings(file) == [*first, "climate", "Climate"]
    # Written whole (the file is not the one read): a new table of the strings in use.
    del again.inspected[path]
    again.stored = None
    write_state(again, file)
    assert shared_strings(file) == first
    assert same(read_state(file), again)


def test_a_state_that_took_another_s_inspections_writes_them(tmp_path: Path) -> None:
    """A preview's state with a file of its own but no inspections, starting from its
    site's build's: the inspections it took are in the other state's file, not in its."""
    own, built = tmp_path / "own.sqlite", tmp_path / "built.sqlite"
    write_state(dataclasses.replace(a_state(), inspected={}), own)
    write_state(a_state(), built)
    state = read_state(own)
    state.adopt_inspections(read_state(built))
    write_state(state, own)
    assert same(read_state(own), state)
    assert len(read_state(own).inspected) == len(a_state().inspected)


def test_a_string_table_outgrowing_its_last_whole_write_is_written_whole(tmp_path: Path
                                                                       ) -> None:
    """Strings no record names any more stay in the table between whole writes: once it
    holds more than twice what the last whole write made it, and SPARE_STRINGS more,
    the state is written whole with a new table."""
    file = tmp_path / "s.sqlite"
    write_state(a_state(), file)
    whole = len(shared_strings(file))
    sizes = []
    for turn in range(8):  # each write replaces the last one's stories and their links
        state = read_state(file)
        for path in [p for p in state.inspected if "/turn-" in p]:
            del state.inspected[path]
        for n in range(60):
            links = [{"url": f"https://example.org/{turn}/{n}/{i}", "headline": "",
                      "slug": "x"} for i in range(4)]
            story = Story.model_validate(make_story(n, f"newsroom-{turn}-{n}",
                                                    related=links))
            path = f"content/stories/turn-{turn}-{n}.json"
            state.inspected[path] = FileRecord(packed_stat(n, n, n),
                                               LoadedStory.of(path, story, f"{n:064x}"), ())
        write_state(state, file)
        sizes.append(len(shared_strings(file)))
        assert same(read_state(file), state)
    limit = 2 * whole + SPARE_STRINGS
    # Grown by each difference until past the limit, then made anew: the strings of the
    # last stories written and those of the first state only.
    growing = sizes[: next(i for i in range(1, len(sizes)) if sizes[i] < sizes[i - 1])]
    assert growing == sorted(growing) and growing[-1] > limit
    assert all(size <= 2 * limit for size in sizes)
    assert min(sizes[len(growing):]) < whole + 60 * 6 + 1


def test_units_read_in_batches_are_the_units_written(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader makes the records of a row of the unit log at once
    (state._read_unit_log): whatever a row holds (usual files in plain folders, other
    files, a safe folder the quick test does not pass), the units read are the ones
    written, in their order (in each row, those with their usual files first), each a
    record that cannot change. (A folder outside the site: see the test above.)"""
    import desk.build.state as state_module

    monkeypatch.setattr(state_module, "_UNIT_BATCH", 3)
    state = a_state()
    units = dict(state.units)
    units["/.well-known/x/"] = UnitRecord.of("/.well-known/x/", "w", (
        ".well-known/x/index.html", ".well-known/x/index.json"), "d")
    units["/editions/2026-11-10T09/"] = UnitRecord.of("/editions/2026-11-10T09/", "e", (
        "editions/2026-11-10T09/index.html", "editions/2026-11-10T09/index.json"), "")
    units["/sitemap-stories-2026-11.xml"] = UnitRecord("s", ("sitemap-stories-2026-11.xml",))
    state.advance(state.site_id, units, state.loose, "s-2")
    write_state(state, tmp_path / "s.sqlite")
    read = read_state(tmp_path / "s.sqlite")
    rows = [list(units)[start:start + 3] for start in range(0, len(units), 3)]
    assert list(read.units) == [unit for row in rows for unit in sorted(
        row, key=lambda unit: not read.units[unit].usual)]
    assert read.units == units
    assert [read.units[unit].usual for unit in units] == [3] * 6 + [0, 0, 2, 0]
    with pytest.raises(AttributeError):
        read.units["/feed/"].key = "other"  # type: ignore[misc]
    assert read.units["/feed/"] != UnitRecord("other", ("feed.xml",))


# Paths made of the characters that decide whether a folder is plain.
FOLDER_PATHS = st.lists(st.text(st.sampled_from("/.a\\\x00-"), max_size=8), max_size=6)


@given(FOLDER_PATHS, st.sampled_from(["/", "/a/", "/stories/"]), st.booleans())
def test_folders_told_plain_at_once_are_those_told_one_by_one(
        paths: list[str], under: str, below: bool) -> None:
    from desk.urls import plain_folder, plain_folders

    if below:  # most of them below `under`
        paths = [under + path.lstrip("/") for path in paths]
    assert plain_folders(paths, under) == all(
        plain_folder(path) and path.startswith(under) for path in paths)


@given(FOLDER_PATHS, st.integers(0, 5))
def test_a_folder_holding_a_line_break_is_never_told_plain_at_once(paths: list[str],
                                                                    at: int) -> None:
    from desk.urls import plain_folders

    assert not plain_folders([*paths[:at], "/a\n/b/", *paths[at:]])


def test_a_story_holding_every_kind_of_value_reads_back_as_inspected(tmp_path: Path) -> None:
    """A story's record: corrections (so a modification that is not the publication),
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
    state = SavedState(inspected={item.path: FileRecord(packed_stat(1, 2, n), item, ())
                                  for n, item in enumerate((full, plain))})
    write_state(state, tmp_path / "s.sqlite")
    read = read_state(tmp_path / "s.sqlite")
    for item in (full, plain):
        found = read.inspected[item.path].story
        assert found is not None and found == item
        assert found.summary._compared() == item.summary._compared()
        # Kept with the record, as made from its URL and digest when it was inspected.
        assert found.search_entry == search_entry(item.url_path, item.digest)
    summary = read.inspected[full.path].story.summary  # type: ignore[union-attr]
    assert summary.modified_at == datetime(2026, 11, 15, 7, 30, tzinfo=UTC)
    assert summary.modified_at.utcoffset() is not None and summary.corrections
    assert summary.images and summary.related_urls and summary.agent == "scout"


def test_the_unit_log_grows_by_each_difference_and_is_written_whole_past_its_limits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each difference adds a row to the unit log (units rendered again, added, dropped,
    and one dropped then added back), read back as the units written; past LOG_ROWS
    rows, or once its rows name an eighth as many units as the state has, the log is
    written whole (state._write_unit_log)."""
    import desk.build.state as state_module

    monkeypatch.setattr(state_module, "LOG_ROWS", 3)
    file = tmp_path / "s.sqlite"
    state = a_state()
    state.advance(state.site_id, {**state.units, **dict(unit(n) for n in range(6, 200))},
                  state.loose, "s-1")
    write_state(state, file)
    logs = []
    for turn in range(12):
        state = read_state(file)
        units = dict(state.units)
        for n in (turn, 50 + turn):  # rendered again
            units.pop(unit(n)[0])
            units.update([unit(n, key=f"t{turn}-")])
        units.pop(unit(90 + turn % 5)[0], None)  # dropped, or back after a turn
        units.update([unit(90 + (turn - 1) % 5)])
        if turn == 5:  # past an eighth of the state's 201 units named since the whole write
            units.update(unit(n, key="five-") for n in range(20, 42))
        state.advance(state.site_id, units, state.loose, f"s-{turn}")
        write_state(state, file)
        read = read_state(file)
        assert read.units == units and read.units[unit(turn)[0]].key == f"t{turn}-{turn}"
        assert read.stored is not None
        logs.append((read.stored.logs[0].rows, read.stored.logs[0].named))
    # Each turn names 4 units: 2 rendered again, 1 dropped, 1 added.
    assert logs == [(1, 4), (2, 8), (3, 12), (0, 0), (1, 4), (0, 0), (1, 4), (2, 8),
                    (3, 12), (0, 0), (1, 4), (2, 8)]
    with contextlib.closing(sqlite3.connect(file)) as db:  # one whole, two added
        assert db.execute("SELECT count(*) FROM unit_log").fetchone() == (3,)


def test_the_record_log_grows_by_each_difference_and_is_written_whole_past_its_limits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each difference adds a row to the record log (a story inspected again, one
    added, one dropped; or files restated, their stats only), read back as the
    inspections written (an inspection with findings and no story among them), and
    compared with a survey by the last row that names each file (state.unvouched); past
    LOG_ROWS rows, or an eighth of the inspections named, the log is written whole
    (state._write_record_log), in rows of _RECORD_BATCH."""
    import desk.build.state as state_module

    monkeypatch.setattr(state_module, "LOG_ROWS", 3)
    monkeypatch.setattr(state_module, "_RECORD_BATCH", 16)
    file = tmp_path / "s.sqlite"

    def path(n: int) -> str:
        return f"content/stories/story-{n}.json"

    state = a_state()
    state.inspected.update({path(n): record(n) for n in range(6, 120)})
    write_state(state, file)
    logs = []
    for turn in range(8):
        state = read_state(file)
        if turn == 2:  # only restated
            for n in range(5):
                stat, blob = state.inspected[path(n)].stated(path(n))
                state.inspected[path(n)] = state.inspected[path(n)].restated(stat + 1, blob)
        else:
            state.inspected[path(10 + turn)] = record(10 + turn, stat=2 + turn)
            state.inspected[path(100 + turn)] = record(100 + turn)
            del state.inspected[path(40 + turn)]
        if turn == 1:  # past an eighth of the 121 inspections named since the whole write
            state.inspected.update({path(n): record(n, stat=9) for n in range(20, 33)})
        write_state(state, file)
        read = read_state(file)
        assert same(read, state)
        assert read.stored is not None
        logs.append((read.stored.logs[1].rows, read.stored.logs[1].named))
        # Surveyed as saved: every file vouched for, but one changed since, one restated
        # before (if its stat is the one it had) and one dropped.
        stats: dict[str, int | None] = {p: r.stated(p)[0] for p, r in read.inspected.items()}
        stats[path(1)] = packed_stat(5, 5, 5)
        stats[path(3)] = packed_stat(1, 103, 10)  # record(3)'s, restated at the third turn
        for n in (40, 43):  # their stats as recorded, dropped at the first and fourth turns
            stats[path(n)] = packed_stat(1, 100 + n, 7 + n)
        told = unvouched(file, stats, None)
        assert told is not None and told[1] == {path(1), path(40)} | (
            {path(3)} if turn >= 2 else set()) | ({path(43)} if turn >= 3 else set())
    # Each turn names 3 inspections (1 inspected again, 1 added, 1 dropped); the third
    # 5 restated.
    assert logs == [(1, 3), (0, 0), (1, 5), (2, 8), (3, 11), (0, 0), (1, 3), (2, 6)]
    with contextlib.closing(sqlite3.connect(file)) as db:  # 121 in rows of 16, two added
        assert db.execute("SELECT count(*) FROM record_log").fetchone() == (10,)
