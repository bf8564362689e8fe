"""The saved state: what a build leaves in `.desk-cache/` for the next one, and its file.

What it holds (see desk.build.cache for how builds use it):

- inspected story files (summary, digest, git blob id and findings) by path, with the
  stat they were inspected under and the check key their findings hold for (each a
  desk.build.records.FileRecord, as each unit's is a UnitRecord);
- rendered units (a story's three files, a list page and its index.json, a feed...)
  with the key each was rendered under;
- the spare: what the site before the current one holds, so the writer can recycle
  that folder as its next staging folder (see desk.build.writer);
- the sealed search bundles (desk.search.bundles): each one's entries as they were indexed;
- the URL history (desk.content.history);
- the strings many stories share (newsrooms, editions, beats, agents, the URLs of
  related links), each once, named in the stories' records by number (StringTable).

The file is an SQLite database: a row per inspected file (where its stat and its
story's texts are read) and per unit (where its index.json digest is read), a row per
chunk of shared strings and of the URL history's lines, and the rows of two logs that
the inspections' and the units' records are read from, each a batch of records, a
difference adding a row of its own (see _write_record_log).
Read a row (or a batch) at a time, it never holds the whole archive twice in memory (a
JSON document is parsed whole before a record can be made of it), and the stories'
texts stay in it until a page shows them, as do the units' index.json digests until a
list shows them (StateFile): an hourly build holds little more than what orders and
keys them.
Written as the difference from what was read: an hourly build rewrites the rows of the
stories it touched (and, after a fresh checkout, the stat of each file git does not
vouch for), not the archive. A generation token guards the difference: when the file
on disk is not the one this state was read from, it is written whole instead.
Every write is one transaction (or a whole new file moved into place): a build that
dies meanwhile leaves the last good state. A state that cannot be read, or whose row
counts differ from the ones it records, is no state at all: the build starts afresh.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import secrets
import shutil
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from datetime import datetime
from itertools import compress, repeat
from pathlib import Path
from typing import Any

import orjson

from desk.build.heap import collector_paused
from desk.build.records import (
    NEW,
    RESTATED,
    STORED,
    FileRecord,
    Stat,
    UnitRecord,
    check_usual,
    findings_json,
    git_may_vouch,
    inspection_of,
    packed_stat,
    stat_values,
)
from desk.build.slots import slot_maker
from desk.build.writer import SiteRecord, UnitFiles
from desk.content.findings import Finding
from desk.content.history import UrlHistory, history_from_lines, lines_form
from desk.content.loader import ContentChanged, LoadedStory, StoredTexts, Summary, Texts
from desk.urls import USUAL_FILES, plain_folder, plain_folders, relative_file, usual_count

# 12: the strings stories share kept once (StringTable); 13: the URL history in lines;
# 14: its lines in chunks, a row for each; 15: the shared strings in chunks too; 16: the
# units read from a log of their records in batches (_read_unit_log); 17: the
# inspections too (_read_record_log); 18: each story's search entry with its record
STATE_VERSION = 18
# Strings a table may gain past twice its size at the last whole write (StringTable).
SPARE_STRINGS = 1024
# Strings in a row of the state's string table, as a JSON array: read a row at a time,
# 138,000 strings at 100,000 stories took four times as long.
STRINGS_PER_CHUNK = 2000
# Saved states of output folders kept at most (the oldest go first).
MAX_SAVED = 20
SUFFIX = ".sqlite"

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE inspected (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL, size INTEGER NOT NULL,
                        ino INTEGER NOT NULL, blob TEXT NOT NULL, story BLOB, texts BLOB,
                        findings BLOB);
CREATE TABLE units (id TEXT PRIMARY KEY, key TEXT NOT NULL, files BLOB NOT NULL,
                    json_digest TEXT NOT NULL);
CREATE TABLE unit_log (n INTEGER PRIMARY KEY, ids TEXT NOT NULL, keys TEXT NOT NULL,
                       usual BLOB NOT NULL, odd BLOB NOT NULL, dropped BLOB NOT NULL);
CREATE TABLE record_log (n INTEGER PRIMARY KEY, dropped BLOB NOT NULL, stories BLOB NOT NULL,
                         others BLOB NOT NULL, stats BLOB NOT NULL);
CREATE TABLE strings (n INTEGER PRIMARY KEY, texts BLOB NOT NULL);
CREATE TABLE history (n INTEGER PRIMARY KEY, lines TEXT NOT NULL);
"""


_NEW_TUPLE = tuple.__new__


class StringTable:
    """The strings many stories share (newsrooms and their titles, editions, trust
    labels, beats, agents, the URLs of related links), each kept once in the state's
    `strings` table and named in a story's record by its number. A record is then read
    without parsing, hashing and interning those strings again for each story: at
    100,000 stories linking to four others, they were half of a record's bytes, and the
    records are read on every build. A string keeps its number; one not in the table
    yet is added at its end, and a state written whole has a new table, of the strings
    its records name: so it is written whole once the table has outgrown the one it
    last made (strings no record names any more are left in it until then)."""

    __slots__ = ("texts", "whole", "_numbers", "_stored")

    def __init__(self, texts: list[str], whole: int | None = None) -> None:
        self.texts = texts  # by number
        # How many strings the table held when the state was last written whole.
        self.whole = len(texts) if whole is None else whole
        self._numbers: dict[str, int] = {}  # those looked up (see `look_up`) or added
        self._stored = len(texts)  # how many of them the state's file holds

    def outgrown(self) -> bool:
        """Whether the table holds more than twice the strings it held when the state was
        last written whole (and a few more, for a small site): then it is written whole."""
        return len(self.texts) > 2 * self.whole + SPARE_STRINGS

    def look_up(self, wanted: Collection[str]) -> None:
        """Find the numbers of these strings in one pass over the table, for the records
        about to be written: a map of the whole table would be 10 MB more at the peak of
        an hourly build at 100,000 stories, for the few records it writes."""
        numbers = self._numbers
        for number, text in enumerate(self.texts):
            if text in wanted:
                numbers.setdefault(text, number)

    def number(self, text: str) -> int:
        """The number of a string: as looked up or added, else a new one at the end of
        the table (a string it holds but was not looked up for is added again: still
        read as itself)."""
        numbers = self._numbers
        number = numbers.get(text)
        if number is None:
            number = numbers[text] = len(self.texts)
            self.texts.append(text)
        return number

    def unstored(self) -> list[tuple[int, bytes]]:
        """The rows of the chunks of strings (STRINGS_PER_CHUNK, in a JSON array each)
        that hold strings added since the table was read or last stored: the last one
        stored, rewritten, and those after it."""
        per, texts = STRINGS_PER_CHUNK, self.texts
        return [(n, orjson.dumps(texts[n * per:(n + 1) * per]))
                for n in range(self._stored // per, -(-len(texts) // per))]

    def stored(self) -> None:
        """Say that the state's file now holds every string of the table."""
        self._stored = len(self.texts)


@dataclass(frozen=True)
class Stored:
    """What the state's file held when this state was read or last written: the
    generation token and its units (as objects), to write only what changed. Each
    inspection says whether it changed since (`FileRecord.origin`); the file's own list
    of them says which were dropped."""

    file: Path
    generation: str
    units: Mapping[str, UnitRecord]
    strings: StringTable = field(default_factory=lambda: StringTable([]))
    history: UrlHistory | None = None
    # How far the unit log and the record log have grown since written whole.
    logs: tuple[LogGrowth, LogGrowth] = field(
        default_factory=lambda: (LogGrowth(0, 0), LogGrowth(0, 0)))


@dataclass(frozen=True)
class LogGrowth:
    """How far a log of the state's file (the unit log: _write_unit_log; the record log:
    _write_record_log) has grown past its last whole write: the rows added since, and
    the units or inspections they name."""

    rows: int
    named: int

    def after(self, named: int, whole: int) -> LogGrowth | None:
        """The growth once a row naming `named` more is added to a log of `whole` in
        all; None when the log is to be written whole instead: past LOG_ROWS rows, or
        once its rows name an eighth of the whole (the reader would make as many records
        again)."""
        grown = LogGrowth(self.rows + 1, self.named + named)
        return grown if grown.rows <= LOG_ROWS and 8 * grown.named <= whole else None


@dataclass(frozen=True)
class UnitChanges:
    """What a build did to the units it started from (`base`, the very mapping), as its
    ledger tells it: the units whose records are not the very ones of `base`, and the
    units of `base` it dropped (sorted)."""

    base: Mapping[str, UnitRecord]
    replaced: list[str]
    dropped: list[str]


@dataclass
class SavedState:
    """What the next build needs to know of this one."""

    site_id: str = ""
    units: dict[str, UnitRecord] = field(default_factory=dict)
    loose: tuple[str, ...] = ()  # files of the current site outside any unit
    check_key: str = ""  # what the inspected files' findings were checked against
    inspected: dict[str, FileRecord] = field(default_factory=dict)
    spare: SiteRecord | None = None
    history: UrlHistory | None = None  # after the build that made the site `site_id`
    # The sealed search bundles of the site `site_id`: name → entry tokens.
    search: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The image files the last build probed, by content path (desk.content.media).
    media: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    # The site key and the newsrooms' titles (key, title) the units' story keys were
    # made under, as far as they are known: with both the same, a story whose file and
    # links are the last build's has the key it had (see desk.build.pipeline).
    keyed_under: tuple[str, tuple[tuple[str, str], ...]] = ("", ())
    held: tuple[str, ...] = ()  # the URL paths of the stories held back (their key differs)
    # The digests of the parts of `units` that `site_id` is made of (keys.site_parts),
    # when known: an hourly build makes again only those of the parts it touched.
    site_parts: dict[str, str] | None = None
    stored: Stored | None = field(default=None, compare=False, repr=False)
    # An inspection has brought `inspected` up to date since `units` were last advanced
    # (a build that did not finish): what changed since the units' build is not known.
    inspected_ahead: bool = field(default=False, compare=False, repr=False)
    # What the build that advanced `units` replaced and dropped, when its ledger said:
    # a difference write then looks at those units, not at each of the archive's.
    unit_changes: UnitChanges | None = field(default=None, compare=False, repr=False)

    def describes(self, live_id: str | None) -> bool:
        """True when this state is of the live site (`live_id`: its id)."""
        return bool(self.site_id) and self.site_id == live_id

    def site(self) -> SiteRecord:
        """The site this state describes (none at all when its id is empty)."""
        return SiteRecord(self.site_id, self.units, self.loose)

    def units_of(self, live_id: str | None) -> dict[str, UnitRecord]:
        """The units of the live site, if this state describes it (else none)."""
        return self.units if self.describes(live_id) else {}

    def parts_of(self, live_id: str | None) -> dict[str, str] | None:
        """The digests of the parts of the live site's units, if this state describes
        it and knows them."""
        return self.site_parts if self.describes(live_id) else None

    def adopt_inspections(self, other: SavedState) -> None:
        """Start from another state's inspections of the content (and of its images) when
        this one has none: a preview's first start, from its site's build. They hold for
        the files as they were, under the check key they were made under."""
        if not self.inspected and other.inspected:
            self.inspected, self.check_key = other.inspected, other.check_key
            self.media = dict(other.media)
            # Stored in the other state's file, not in this one's: it is written whole.
            self.stored = None

    def search_of(self, live_id: str | None) -> dict[str, tuple[str, ...]]:
        """The sealed search bundles of the live site, if this state describes it."""
        return self.search if self.describes(live_id) else {}

    def disown(self) -> None:
        """Forget the sites this state describes (their files cannot be trusted); keep
        the inspections and the URL history."""
        self.site_id, self.units, self.loose, self.spare = "", {}, (), None
        self.search, self.keyed_under, self.site_parts = {}, ("", ()), None

    def forget_units(self, unit_ids: Collection[str]) -> None:
        """Forget some units of the live site (their files are not what was recorded):
        the next build renders them."""
        self.units = {k: v for k, v in self.units.items() if k not in unit_ids}
        self.site_parts = None  # no longer those of the units

    def advance(self, live_id: str | None, units: dict[str, UnitRecord],
                loose: tuple[str, ...], site_id: str,
                parts: dict[str, str] | None = None,
                changes: UnitChanges | None = None) -> None:
        """Describe the site just swapped in (`parts`: its units' parts' digests, when
        made; `changes`: what the build did to the units it started from, as its ledger
        tells it); the one it replaced becomes the spare."""
        known = self.describes(live_id)
        self.unit_changes = changes
        # The units' mapping itself, not a copy: a state's mappings are replaced, never
        # changed in place, once a build has read them.
        self.spare = self.site() if known else None
        self.units, self.loose = units, loose
        self.site_id, self.site_parts = site_id, parts
        self.inspected_ahead = False


# ---------------------------------------------------------------- reading

def read_state(path: Path, spare: bool = True, records: bool = True) -> SavedState:
    """A saved state, or an empty one if there is none or it is unreadable; without what
    it knows of the spare folder unless `spare` (when there is no such folder, it is of
    no use, and after a change to desk's code it is as large as the site's own units);
    without its inspections and units unless `records` (what its site is and its URL
    history are read all the same).

    The state's file stays open while its stories' texts may be read from it (see
    StateFile)."""
    if not path.is_file():
        return SavedState()
    with collector_paused(long_lived=True):
        db: sqlite3.Connection | None = None
        try:
            db = _connect(path, readonly=True)
            return _read_state(db, path, spare, records)
        except (sqlite3.Error, OSError, ValueError, KeyError, TypeError, IndexError,
                AttributeError):
            if db is not None:
                db.close()
            return SavedState()


def unvouched(path: Path, stats: Mapping[str, Stat | None], clean: Mapping[str, str] | None
              ) -> tuple[str, frozenset[str]] | None:
    """Of the files surveyed with these stats (and git's blob ids of its clean files, if
    asked), those whose inspection the state saved in `path` does not hold good by their
    stat or git's word (see git_may_vouch), with the generation of the state that says so;
    None when it cannot be read. What a forked survey tells the build, which then looks
    at those files only: read from the record log's stats (see _record_log_row), never
    made into records, the last row first, so that a file is told by the last row that
    names it (the rows a difference added: the log's growth; the ones before name each
    file once)."""
    left = dict.fromkeys(stats)
    try:
        with contextlib.closing(_connect(path, readonly=True)) as db:
            meta = {name: orjson.loads(value) for name, value in db.execute(
                "SELECT name, value FROM meta "
                "WHERE name IN ('version', 'generation', 'record_log')")}
            if meta["version"] != STATE_VERSION:
                return None
            added = LogGrowth(*meta["record_log"]).rows
            told: set[str] = set()  # by a row added since the whole write
            for n, (dropped, columns) in enumerate(db.execute(
                    "SELECT dropped, stats FROM record_log ORDER BY n DESC")):
                names = _stats_vouched(orjson.loads(columns), told, stats, clean)
                for name in names.vouched:
                    del left[name]
                if n < added:
                    told.update(names.named, orjson.loads(dropped))
            return str(meta["generation"]), frozenset(left)
    except (sqlite3.Error, OSError, ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True)
class _Told:
    named: list[str]  # the files a row of the record log names
    vouched: list[str]  # those of them surveyed whose inspection holds good


def _stats_vouched(columns: list[list[Any]], told: Collection[str],
                   stats: Mapping[str, Stat | None], clean: Mapping[str, str] | None
                   ) -> _Told:
    """Of a row of the record log's stats (paths, mtimes, sizes, inodes, blob ids and
    whether each holds a story: see _record_log_row), the files not `told` by a later
    row that were surveyed and whose inspection holds good by their stat or by git's
    word (git_may_vouch, asked only of the files git holds with the blob id recorded):
    told by maps over the columns (at 100,000 stories, the inspected table's rows, one
    at a time, were a quarter of a second of a fresh runner's survey)."""
    if not columns:
        return _Told([], [])
    _check_columns(columns, 6, "the record log's stats")
    named = columns[0]
    if told:
        kept = [name not in told for name in named]
        columns = [list(compress(column, kept)) for column in columns]
    names, mtimes, sizes, inos, blobs, stories = columns
    now = list(map(stats.get, names))
    saved = list(map(packed_stat, map(int, mtimes), map(int, sizes), map(int, inos)))
    same = map(operator.eq, saved, now)
    if clean is None:
        return _Told(named, list(compress(names, same)))
    by_git = map(clean.get, names)
    return _Told(named, [
        name for name, stat, kept_stat, story, blob, git_blob, saved_stat in zip(
            names, now, same, stories, blobs, by_git, saved, strict=True)
        if stat is not None and (kept_stat or git_blob == blob and git_may_vouch(
            saved_stat, blob, story, stat))])


def _read_state(db: sqlite3.Connection, path: Path, spare: bool, records: bool = True
                ) -> SavedState:
    # The spare's row is not even read when it is not wanted (it may be megabytes).
    meta = {name: orjson.loads(value) for name, value in db.execute(
        "SELECT name, value FROM meta" + ("" if spare else " WHERE name != 'spare'"))}
    if meta.get("version") != STATE_VERSION:
        raise ValueError("another version")
    source = StateFile(db, path)
    strings = StringTable(_read_strings(db) if records else [],
                          _count_from_json(meta.get("strings_whole")))
    text = strings.texts.__getitem__
    inspected = _read_record_log(db, source, text) if records else {}
    source.records = inspected
    # One string in memory for each story's URL path, id and search entry, which the
    # units, the URL history and the sealed search bundles name again (each string maps
    # to an equal one, so the three kinds share a table).
    stories = [record.story for record in inspected.values() if record.story is not None]
    known = {story.url_path: story.url_path for story in stories}
    shared = {**known, **{story.summary.id: story.summary.id for story in stories},
              **{story.search_entry: story.search_entry for story in stories}}
    units = _read_unit_log(db, source, shared) if records else {}
    if records and [len(inspected), len(units), len(strings.texts)] != meta["counts"]:
        raise ValueError("rows are missing")  # a file cut short
    # The tables where a digest, a story's texts or a file's stat left in the file are
    # read hold a row for each unit and inspection the logs hold.
    if records and [db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                    for table in ("inspected", "units")] != [len(inspected), len(units)]:
        raise ValueError("rows are missing")
    history = meta["history"]
    state = SavedState(site_id=str(meta["site_id"]), units=units,
                       loose=_files_from_json("/", meta["loose"]),
                       check_key=str(meta["check_key"]), inspected=inspected,
                       spare=_spare_from_json(meta["spare"], units) if spare else None,
                       history=None if history is None else history_from_lines(
                           _history_chunks(db, meta), history, known, shared),
                       search=_search_from_json(meta["search"], shared),
                       media=dict(meta.get("media") or {}),
                       site_parts=_parts_from_json(meta.get("site_parts")),
                       **_keyed_from_json(meta.get("keyed_under")))
    state.stored = Stored(path, str(meta["generation"]), units, strings, state.history,
                          (LogGrowth(*meta["unit_log"]), LogGrowth(*meta["record_log"])))
    return state


def _read_unit_log(db: sqlite3.Connection, source: StateFile, shared: Mapping[str, str]
                   ) -> dict[str, UnitRecord]:
    """Every unit's record, from the unit log (see _write_unit_log): its rows in order,
    each dropping units and setting others, their index.json digests left in the file
    (see StateFile); a unit named by a string of `shared`, that one. A row's units with
    their usual files are read as columns, not a row each: at 100,000 stories, the
    units table's 155,000 rows took 0.25 s to read, most of it SQLite's own."""
    units: dict[str, UnitRecord] = {}
    held = (source, "")  # by whether the digest is empty: left in the file, or none
    for ids, keys, usual, odd, dropped in db.execute(
            "SELECT ids, keys, usual, odd, dropped FROM unit_log ORDER BY n"):
        for unit in orjson.loads(dropped):
            del units[unit]
        if usual:
            _read_columns(units, (ids.split("\n"), keys.split("\n"), usual), held, shared)
        for unit, (key, files, empty) in orjson.loads(odd).items():
            unit = shared.get(unit, unit)
            units[unit] = _unit_record(unit, key, files, held[empty])
    return units


def _read_columns(units: dict[str, UnitRecord], columns: tuple[list[str], list[str], bytes],
                  held: tuple[StateFile, str], shared: Mapping[str, str]) -> None:
    """Set the records of a log row's units with their usual files (see _log_row): made
    in C when their folders pass the quick test, else one by one."""
    _check_columns(columns, 3, "the unit log")
    named, keys, usual = columns
    ids = list(map(shared.get, named, named))
    counts = list(usual.translate(_LOGGED_COUNT))
    digests = list(map(held.__getitem__, usual.translate(_LOGGED_EMPTY)))
    if plain_folders(ids) and _USUAL_COUNTS.issuperset(counts):
        records = list(map(_NEW_TUPLE, repeat(UnitRecord), zip(keys, digests, counts, ids,
                                                                strict=True)))
    else:
        records = list(map(UnitRecord.of, ids, keys, counts, digests))
    units.update(zip(ids, records, strict=True))


def _check_columns(columns: Sequence[Sized], count: int, log: str) -> None:
    """Raise ValueError unless a log's row holds `count` columns, all of one length."""
    if len(columns) != count or len(set(map(len, columns))) > 1:
        raise ValueError(f"a row of {log} cut short")


# A logged unit's byte: the count of its usual files, 4 more when its digest is empty; a
# byte past 7 is no count (0).
_LOGGED_COUNT = bytes(byte & 3 if byte < 8 else 0 for byte in range(256))
_LOGGED_EMPTY = bytes(byte >> 2 & 1 for byte in range(256))
_USUAL_COUNTS = frozenset(USUAL_FILES)


def _read_strings(db: sqlite3.Connection) -> list[str]:
    """The string table, by number, from its chunks (see StringTable.unstored): each but
    the last full, none missing (their count is checked with the table's own)."""
    texts: list[str] = []
    for n, chunk in db.execute("SELECT n, texts FROM strings ORDER BY n"):
        if n * STRINGS_PER_CHUNK != len(texts):
            raise ValueError("a chunk of strings missing, or one not full")
        found = orjson.loads(chunk)
        if type(found) is not list:
            raise ValueError("not a chunk of strings")
        texts += found
    return texts


def _history_chunks(db: sqlite3.Connection, meta: Mapping[str, Any]) -> list[str]:
    """The history's chunks of lines (see lines_form), in order, all of them."""
    chunks = [lines for (lines,) in db.execute("SELECT lines FROM history ORDER BY n")]
    if len(chunks) != meta["history_chunks"]:
        raise ValueError("rows are missing")
    return chunks


# Units in a row of the unit log written whole: large enough that a row's calls cost
# little, small enough that its columns are not held beside an archive's records.
_UNIT_BATCH = 8192
# Inspections in a row of the record log written whole (as _UNIT_BATCH).
_RECORD_BATCH = 4096
# Rows a log gains past its last whole write, at most (see LogGrowth.after).
LOG_ROWS = 64


def _count_from_json(data: Any) -> int | None:
    if data is None:
        return None
    if type(data) is not int or data < 0:
        raise ValueError("not a count")
    return data


def _read_record_log(db: sqlite3.Connection, source: StateFile, text: Callable[[int], str]
                     ) -> dict[str, FileRecord]:
    """Every inspection's record, from the record log (see _write_record_log): its rows
    in order, each dropping inspections and setting others, their stats and their
    stories' texts left in the file (see StateFile). A row's stories are read as
    columns, their records made in C but for a call of each record's maker: at 100,000
    stories, the inspected table's rows, a JSON array each, took a third longer."""
    records: dict[str, FileRecord] = {}
    for dropped, stories, others in db.execute(
            "SELECT dropped, stories, others FROM record_log ORDER BY n"):
        for path in orjson.loads(dropped):
            del records[path]
        columns = orjson.loads(stories)
        if columns:
            records.update(_stories_from_columns(columns, source, text))
        for path, findings in orjson.loads(others):
            records[path] = _FILE_RECORD(source, None, _findings_from_json(findings), "",
                                         STORED)
    return records


def _stories_from_columns(columns: list[list[Any]], source: StateFile,
                          text: Callable[[int], str]) -> Iterator[tuple[str, FileRecord]]:
    """The records of a record log row's stories, by path, from its columns: the paths,
    the findings and each value of a story's record (see _story_to_json), in order.
    Their shared strings taken from the state's table (`text`: a string by its number;
    one string in memory for each, however many stories name it)."""
    _check_columns(columns, 18, "the record log")
    (paths, findings, digests, url_paths, entries, ids, newsrooms, titles, editions, published,
     modified, trusts, links, related, beats, agents, corrections, images) = columns
    # A number past the table's end, or not a number, is an IndexError or a TypeError,
    # which makes the state no state at all; a number changed within the table reads
    # another of its strings, as a changed string reads another string (the file's
    # structure and counts are checked, not each value).
    published_at = list(map(datetime.fromisoformat, published))
    # Most stories were never modified: one value in memory for both.
    modified_at = [at if when == told else datetime.fromisoformat(when)
                   for at, when, told in zip(published_at, modified, published, strict=True)]
    summaries = map(_SUMMARY, ids, map(text, newsrooms), map(text, titles), map(text, editions),
                    published_at, modified_at, map(text, trusts), links,
                    [tuple(map(text, urls)) if urls else () for urls in related],
                    map(text, beats), map(text, agents),
                    [tuple((datetime.fromisoformat(at), *said) for at, *said in made) if made
                     else () for made in corrections],
                    map(_STORED_TEXTS, repeat(source), paths, digests), map(tuple, images))
    stories = map(_LOADED_STORY, paths, summaries, digests, url_paths, entries, repeat(False),
                  repeat(""))
    found = [() if f is None else _findings_from_json(f) for f in findings]  # most: none
    return zip(paths, map(_FILE_RECORD, repeat(source), stories, found, repeat(""),
                          repeat(STORED)), strict=True)


def _findings_from_json(data: Any) -> tuple[Finding, ...]:
    return () if data is None else tuple(Finding(*f) for f in data)


class StateFile:
    """The state's file, for what a build leaves in it until a page shows it instead of
    holding it for the whole archive: the texts of the inspected stories (headline,
    dek...) and the index.json digests of the units.

    It reads through the connection the state was read with, which sees that file even
    when a later build replaces it; a forked process opens its own (a connection must
    not cross a fork). Texts whose story's digest is not the one inspected, or a unit
    not under the key it was read with, mean the file was changed by another build
    meanwhile: ContentChanged, as for a story file."""

    # The texts most recently read, so a page reading several of one story's reads once.
    RECENT = 64
    # Stats read row by row before they are all read at once (file_stat).
    SINGLE_STATS = 1024

    def __init__(self, db: sqlite3.Connection, file: Path) -> None:
        self._db = db
        self._file = file
        self._pid = os.getpid()
        self._recent: dict[tuple[str, str], Texts] = {}
        # The records read from this file, by path, whose stats it holds (see file_stat).
        self.records: Mapping[str, FileRecord] = {}
        self._stats_asked = 0
        self._all_stats = False

    def texts(self, path: str, digest: str) -> Texts:
        """The texts of the story file `path` inspected with bytes of this digest."""
        found = self._recent.get((path, digest))
        if found is not None:
            return found
        row = self._row("SELECT texts FROM inspected WHERE path = ?", path)
        data = orjson.loads(row[0]) if row is not None and row[0] is not None else None
        if data is None or data[0] != digest:
            raise ContentChanged(path)
        if len(self._recent) >= self.RECENT:
            self._recent.clear()
        found = self._recent[(path, digest)] = Texts._make([*data[1:-1], tuple(data[-1])])
        return found

    def file_stat(self, path: str, inspection: str | bytes | None) -> tuple[Stat, str]:
        """The stat and blob id of the file `path` in this file, when its row still holds
        the inspection read from it (`inspection`: its story's digest, else the JSON of
        its findings): the row's own, for the first few asked for (the files an hour
        changed); past them, every row's at once, each set in the record read from it
        (a build that looks at every file, a state written whole: they are then held as
        they were before they were left here). Raises ContentChanged when the row is
        gone, or holds another inspection (a build of the site rewrote the file this
        state was read from: a preview starts from its site's)."""
        if not self._all_stats and self._stats_asked < self.SINGLE_STATS:
            self._stats_asked += 1
            row = self._row(_STAT_QUERY + " WHERE path = ?", path)
            found = _stat_row(row) if row is not None else None
            if found is None or found[2] != inspection:
                raise ContentChanged(path)
            return found[0], found[1]
        if not self._all_stats:
            self._give_stats()
        record = self.records.get(path)
        if (record is None or isinstance(record.held_stat, StateFile)
                or inspection_of(record) != inspection):
            raise ContentChanged(path)
        return record.held_stat, record.held_blob

    def _give_stats(self) -> None:
        """Set every row's stat and blob id in the record read from it that still holds
        the row's inspection and leaves them here."""
        records = self.records
        for row in self._each_row(_STAT_QUERY):
            record = records.get(row[0])
            if record is not None and record.held_stat is self:
                stat, blob, inspection = _stat_row(row)
                if inspection_of(record) == inspection:
                    record.hold_stat(stat, blob)
        self._all_stats = True

    def json_digest(self, unit: str, key: str) -> str:
        """The index.json digest of a unit rendered under this key."""
        row = self._row("SELECT json_digest FROM units WHERE id = ? AND key = ?", unit, key)
        if row is None:
            raise ContentChanged(unit)
        return str(row[0])

    def _row(self, query: str, *values: str) -> Any:
        return next(self._each_row(query, *values), None)

    def _each_row(self, query: str, *values: str) -> Iterator[Any]:
        if self._pid != os.getpid():
            self._db, self._pid = _connect(self._file, readonly=True), os.getpid()
        try:
            yield from self._db.execute(query, values)
        except sqlite3.Error:
            return


# A sealed search bundle's name, as desk.search.bundles makes them: it names a site folder.
_SEALED_NAME = re.compile(r"s-[0-9a-f]{16}")


# What StateFile.file_stat reads of an inspection's row.
_STAT_QUERY = "SELECT path, mtime, size, ino, blob, story, findings FROM inspected"


def _stat_row(row: Any) -> tuple[Stat, str, str | bytes | None]:
    """A row's stat, blob id and what tells its inspection (see StateFile.file_stat): its
    story's digest, read where its record's JSON holds it, or its findings' JSON."""
    _, mtime, size, ino, blob, story, findings = row
    told = (story[2:66].decode() if story[:2] == b'["' and story[66:67] == b'"' else "?"
            ) if story is not None else findings
    return packed_stat(int(mtime), int(size), int(ino)), str(blob), told


def _keyed_from_json(data: Any) -> dict[str, Any]:
    """What the story keys were made under and which stories were held; nothing known
    when it is not the form written (a state from before it was kept, or damaged)."""
    if (isinstance(data, list) and len(data) == 3 and isinstance(data[0], str)
            and isinstance(data[1], dict) and isinstance(data[2], list)
            and all(isinstance(v, str) for v in (*data[1].values(), *data[2]))):
        return {"keyed_under": (data[0], tuple(data[1].items())), "held": tuple(data[2])}
    return {}


def _parts_from_json(data: Any) -> dict[str, str] | None:
    """The digests of the units' parts; not known when not in the form written (a
    state from before they were kept, or damaged)."""
    if isinstance(data, dict) and all(isinstance(v, str) for v in data.values()):
        return data
    return None


def _search_from_json(data: Any, shared: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """The sealed search bundles' entries, each the string of `shared` equal to it when
    there is one (the entry of a story read with the state)."""
    sealed = {}
    for name, tokens in data.items():
        if _SEALED_NAME.fullmatch(name) is None:
            raise ValueError(f"{name!r} is not a search bundle")
        named = tokens.split()
        sealed[name] = tuple(map(shared.get, named, named))
    return sealed


def _spare_from_json(spare: Any, units: dict[str, UnitRecord]) -> SiteRecord | None:
    if not spare["site_id"]:
        return None
    changed = {k: _unit_record(k, v[0], v[1]) for k, v in spare["units"].items()}
    return SiteRecord(str(spare["site_id"]),
                      Overlay(units, changed, frozenset(spare["absent"])),
                      _files_from_json("/", spare["loose"]))


class Overlay(Mapping[str, UnitRecord]):
    """The spare's units as they differ from the current ones: those, but for the
    `absent` ones, with the `changed` ones over them (no copy of the site's units)."""

    def __init__(self, base: Mapping[str, UnitRecord], changed: Mapping[str, UnitRecord],
                 absent: frozenset[str]) -> None:
        self._base, self._changed, self._absent = base, changed, absent

    def __getitem__(self, unit: str) -> UnitRecord:
        found = self._changed.get(unit)
        if found is not None:
            return found
        if unit in self._absent:
            raise KeyError(unit)
        return self._base[unit]

    def __iter__(self) -> Iterator[str]:
        yield from self._changed
        yield from (k for k in self._base if k not in self._absent and k not in self._changed)

    def __len__(self) -> int:
        return sum(1 for _ in self)


# ---------------------------------------------------------------- writing

def write_state(state: SavedState, path: Path) -> None:
    """Save a state (atomically): as the difference from the one `path` holds when it
    is the one this state was read from or last written to, else whole. Keep at most
    MAX_SAVED states in its folder."""
    generation = secrets.token_hex(8)
    written = _write_difference(state, path, generation)
    strings, logs = written if written is not None else _write_whole(state, path, generation)
    strings.stored()
    state.stored = Stored(path, generation, state.units, strings, state.history, logs)
    for record in state.inspected.values():  # all in the file as they are now
        if record.origin != STORED:
            record.placed(STORED)
    _prune(path.parent, keep=path)


@dataclass(frozen=True)
class Difference:
    """What the difference written to a state's file takes from that file itself (texts
    and index.json digests left there), read before the write transaction begins: a read
    through another connection may have to wait for the write's lock, and give up, once
    the write holds more changes than its cache. The rest is made as it is written."""

    inspected: list[tuple[Any, ...]]  # the rows of new inspections whose texts were left
    digests: dict[str, str]  # the digests left in the file, of the units to write
    replaced: list[str]  # the units whose records are not the very ones read (_replaced)
    dropped: list[str]  # the units read that the state no longer has, sorted


def _difference(state: SavedState, stored: Stored) -> Difference:
    """What the difference write of a state reads from its file, read now; the numbers
    of the new records' shared strings looked up in its string table."""
    lost: list[str] = []
    new = [(path, record) for path, record in state.inspected.items() if record.origin == NEW]
    stored.strings.look_up({text for _, record in new if record.story is not None
                            for text in _shared_strings(record.story.summary)})
    inspected = [row for path, record in new if _texts_left(record)
                 and (row := _file_row(path, record, lost, stored.strings)) is not None]
    for path in lost:  # an inspection is a cache: the file is inspected again next time
        del state.inspected[path]
    units, before = state.units, stored.units
    changes = state.unit_changes
    if changes is not None and changes.base is before:
        replaced, dropped = changes.replaced, changes.dropped
    else:
        replaced, dropped = _replaced(units, before), sorted(before.keys() - units.keys())
    digests = {k: units[k].json_digest for k in replaced
               if not isinstance(units[k].held_digest, str)
               and not _same_record(before.get(k), units[k])}
    return Difference(inspected, digests, replaced, dropped)


def _replaced(units: Mapping[str, Any], before: Mapping[str, Any]) -> list[str]:
    """The units whose records are not the very ones of `before`: the few an hourly
    build rendered, told by identity alone (the others are kept, 155,000 at 100,000
    stories), for the full comparison to look at them only."""
    get = before.get
    return [k for k, u in units.items() if get(k) is not u]


def _texts_left(record: FileRecord) -> bool:
    """Whether a record's story texts were left in a state's file."""
    return record.story is not None and not isinstance(record.story.summary.held_texts, Texts)


def _write_difference(state: SavedState, path: Path, generation: str
                      ) -> tuple[StringTable, tuple[LogGrowth, LogGrowth]] | None:
    """The state written as its difference from the file's (None when it cannot be: the
    file is not the one this state was read from or last written to), with the string
    table the file now holds and how far its logs have grown."""
    stored = state.stored
    if stored is None or stored.file != path or not path.is_file():
        return None
    strings = stored.strings
    if strings.outgrown():
        return None  # a new table, of the strings the records name
    try:
        difference = _difference(state, stored)
        with contextlib.closing(_connect(path, readonly=False)) as db, db:
            db.execute("BEGIN IMMEDIATE")  # no other build writes meanwhile
            row = db.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()
            if row is None or orjson.loads(row[0]) != stored.generation:
                db.rollback()
                return None
            change = _write_inspected(db, state.inspected, strings, difference.inspected)
            logs = (_write_units(db, state.units, stored, difference),
                    _write_record_log(db, change, stored.logs[1], len(state.inspected)))
            _write_strings(db, strings)
            _write_meta(db, state, generation, strings, difference)
    except (sqlite3.Error, OSError):
        return None
    return strings, logs


def _write_whole(state: SavedState, path: Path, generation: str
                 ) -> tuple[StringTable, tuple[LogGrowth, LogGrowth]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.unlink(missing_ok=True)
    with contextlib.closing(_connect(temporary, readonly=False)) as db, db:
        # A new file, moved into place only when complete: no journal needed.
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute("BEGIN")
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        strings = StringTable([])
        change = _write_inspected(db, state.inspected, strings)
        logs = (_write_units(db, state.units, None),
                _write_record_log(db, change, None, len(state.inspected)))
        _write_strings(db, strings)
        strings.whole = len(strings.texts)
        _write_meta(db, state, generation, strings)
    os.replace(temporary, path)
    return strings, logs


def _write_strings(db: sqlite3.Connection, strings: StringTable) -> None:
    """The rows of the strings added to the table since the file was read or written."""
    db.executemany("INSERT OR REPLACE INTO strings VALUES (?, ?)", strings.unstored())


def _write_inspected(db: sqlite3.Connection, records: dict[str, FileRecord],
                     strings: StringTable, made: list[tuple[Any, ...]] | None = None
                     ) -> InspectedChange:
    """The rows of the inspections: every one into a new file (`made` None), else what
    changed since the file was read or written (`made`: the rows of the new inspections
    whose texts were left in the file, made before the write began), with what was
    (none told for a new file)."""
    # Rows are made as they are written: a whole archive's at once would be its size again.
    whole = made is None
    restated: list[tuple[Any, ...]] = []
    if made is not None:
        restated = [(path, *stat_values(stat), blob, record.story is not None)
                    for path, record in records.items() if record.origin == RESTATED
                    for stat, blob in [record.stated(path)]]
        db.executemany("UPDATE inspected SET mtime = ?, size = ?, ino = ?, blob = ? "
                       "WHERE path = ?", [(*row[1:5], row[0]) for row in restated])
    lost: list[str] = []
    rows: Iterable[tuple[Any, ...]] = (
        row for path, record in records.items()
        if (whole or (record.origin == NEW and not _texts_left(record)))
        and (row := _file_row(path, record, lost, strings)) is not None)
    if made is not None:  # a difference's rows are few: kept for the record log
        rows = made = [*made, *rows]
    db.executemany("INSERT OR REPLACE INTO inspected VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    for path in lost:  # an inspection is a cache: the file is inspected again next time
        del records[path]
    if made is None:  # a new file: the record log is written from its table
        return InspectedChange([], [], [])
    # Every record has its row by now (the others were read from the file): as many rows
    # as records means none to delete, told without a pass over the archive's paths
    # (0.07 s at 100,000 stories). Else the file's list, not one held beside the records.
    (count,) = db.execute("SELECT count(*) FROM inspected").fetchone()
    dropped = [] if count == len(records) else [
        path for (path,) in db.execute("SELECT path FROM inspected") if path not in records]
    db.executemany("DELETE FROM inspected WHERE path = ?", [(path,) for path in dropped])
    return InspectedChange(made, restated, dropped)


@dataclass(frozen=True)
class InspectedChange:
    """What a difference did to the inspected table (see _write_inspected): the rows it
    wrote (as the table holds them), those whose stat it changed (path, mtime, size,
    inode, blob id and whether it holds a story) and the paths it dropped."""

    written: list[tuple[Any, ...]]
    restated: list[tuple[Any, ...]]
    dropped: list[str]


def _write_record_log(db: sqlite3.Connection, change: InspectedChange,
                      past: LogGrowth | None, whole: int) -> LogGrowth:
    """The record log: what the reader makes the inspections' records of
    (_read_record_log), in rows of batches of inspections, each naming the paths it
    drops and the records of those it sets, and their stats and blob ids apart (what
    a survey compares with the files: see unvouched); the inspected table, a row for
    each, is where a stat or a story's texts left in the file are read. A difference
    adds a row of the rows it wrote, the stats it changed and the paths it dropped
    (`change`) to the log the file holds (`past`), unless the log is to be written whole
    (see LogGrowth.after); written whole from the inspected table's rows, as into a new
    file (`past` None)."""
    named = len(change.written) + len(change.restated) + len(change.dropped)
    grown = _add_to_log(db, _RECORD_LOG, past, (named, whole), lambda: _record_log_row(
        [(row[0], row[5], row[7], *row[1:5]) for row in change.written], change.dropped,
        change.restated))
    if grown is not None:
        return grown
    cursor = db.execute("SELECT path, story, findings, mtime, size, ino, blob FROM inspected")
    while batch := cursor.fetchmany(_RECORD_BATCH):
        db.execute(_RECORD_LOG.insert, _record_log_row(batch, []))
    return LogGrowth(0, 0)


@dataclass(frozen=True)
class _Log:
    """One of the logs of the state's file: its table (and its growth's meta value), and
    the statement that adds a row to it."""

    table: str
    insert: str


_UNIT_LOG = _Log("unit_log",
                 "INSERT INTO unit_log (ids, keys, usual, odd, dropped) VALUES (?, ?, ?, ?, ?)")
_RECORD_LOG = _Log("record_log", "INSERT INTO record_log (dropped, stories, others, stats) "
                                 "VALUES (?, ?, ?, ?)")


def _add_to_log(db: sqlite3.Connection, log: _Log, past: LogGrowth | None,
                counts: tuple[int, int], row: Callable[[], tuple[Any, ...]]) -> LogGrowth | None:
    """Add a row to a log the file holds (`past`: how far it has grown; None: a new file,
    or one to be written whole), made by `row()`, naming `counts[0]` records of
    `counts[1]` in all: how far the log has grown then (as it was, when the row names
    none). None when the log is to be written whole instead (see LogGrowth.after): its
    rows are deleted for the caller to write it."""
    named, whole = counts
    if past is not None:
        if not named:
            return past
        grown = past.after(named, whole)
        if grown is not None:
            db.execute(log.insert, row())
            _put_meta(db, log.table, [grown.rows, grown.named])
            return grown
    db.execute(f"DELETE FROM {log.table}")  # noqa: S608 - one of two names above
    _put_meta(db, log.table, [0, 0])
    return None


def _record_log_row(rows: Sequence[tuple[Any, ...]], dropped: Sequence[str],
                    restated: Sequence[tuple[Any, ...]] = ()) -> tuple[bytes, ...]:
    """A row of the record log: the paths dropped before it; of inspected rows (path,
    story, findings, mtime, size, inode, blob id, as the inspected table holds them),
    the stories' records as columns (see _stories_from_columns), any other inspection's
    path and findings; and the stats of both, with those of `restated` (path, mtime,
    size, inode, blob id, whether it holds a story), as columns (see _stats_vouched)."""
    paths: list[str] = []
    findings: list[Any] = []
    helds: list[list[Any]] = []
    others: list[list[Any]] = []
    stats: list[tuple[Any, ...]] = list(restated)
    for path, story, found, mtime, size, ino, blob in rows:
        parsed = None if found is None else orjson.loads(found)
        stats.append((path, mtime, size, ino, blob, story is not None))
        if story is None:
            others.append([path, parsed])
        else:
            paths.append(path)
            findings.append(parsed)
            helds.append(orjson.loads(story))
    columns = [paths, findings, *map(list, zip(*helds, strict=True))] if paths else []
    return (orjson.dumps(list(dropped)), orjson.dumps(columns), orjson.dumps(others),
            orjson.dumps([list(column) for column in zip(*stats, strict=True)]))


def _file_row(path: str, record: FileRecord, lost: list[str], strings: StringTable
              ) -> tuple[Any, ...] | None:
    """A record's row (None, its path added to `lost`, when its story's texts or its
    stat were left in a state's file that another build has changed since: see
    StateFile)."""
    story = texts = None
    try:
        stat, blob = record.stated(path)
        if record.story is not None:
            story, texts = (orjson.dumps(part) for part in _story_to_json(record.story,
                                                                           strings))
    except ContentChanged:
        lost.append(path)
        return None
    findings = findings_json(record.findings)
    return (path, *stat_values(stat), blob, story, texts, findings)


def _write_units(db: sqlite3.Connection, units: Mapping[str, UnitRecord],
                 stored: Stored | None, difference: Difference | None = None) -> LogGrowth:
    """The rows of the units that changed since the file was read or written (`stored`:
    what it held then, None for a new file; `difference`: what was read of it before
    the write began, with the units replaced since), and the unit log's."""
    before = stored.units if stored is not None else {}
    left = difference.digests if difference is not None else {}
    replaced = difference.replaced if difference is not None else _replaced(units, before)
    written = [k for k in replaced if not _same_record(before.get(k), units[k])]
    db.executemany("INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?)",
                   ((k, u.key, orjson.dumps(_files_to_json(k, u)), _digest_of(k, u, left))
                    for k in written for u in [units[k]]))
    dropped = [k for k in (difference.dropped if difference is not None else before)
               if k not in units]
    db.executemany("DELETE FROM units WHERE id = ?", [(k,) for k in dropped])
    return _write_unit_log(db, units, (written, dropped), stored.logs[0] if stored else None)


def _write_unit_log(db: sqlite3.Connection, units: Mapping[str, UnitRecord],
                    change: tuple[list[str], list[str]], past: LogGrowth | None) -> LogGrowth:
    """The unit log: what the reader makes the units of (_read_unit_log), in rows of
    batches of units, each naming the units it drops and the records of those it sets
    (the units table, a row for each, is what a digest left in the file is read from).
    A difference adds a row of the units it wrote and dropped (`change`) to the log the
    file holds (`past`), unless the log is to be written whole (see LogGrowth.after), as
    it is into a new file (`past` None)."""
    written, dropped = change
    grown = _add_to_log(db, _UNIT_LOG, past, (len(written) + len(dropped), len(units)),
                        lambda: _log_row(units, written, dropped))
    if grown is not None:
        return grown
    ids = list(units)
    db.executemany(_UNIT_LOG.insert, (_log_row(units, ids[start:start + _UNIT_BATCH], [])
                                      for start in range(0, len(ids), _UNIT_BATCH)))
    return LogGrowth(0, 0)


def _log_row(units: Mapping[str, UnitRecord], ids: Sequence[str], dropped: Sequence[str]
             ) -> tuple[str, str, bytes, bytes, bytes]:
    """A row of the unit log: the units dropped, then these units' records. Those with
    their usual files in their folder as columns (ids and keys a line each, a byte of
    count and whether the digest is empty: see _LOGGED_COUNT); any other in JSON."""
    named: list[str] = []
    keys: list[str] = []
    usual = bytearray()
    odd: dict[str, list[Any]] = {}
    for unit in ids:
        record = units[unit]
        files = _files_to_json(unit, record)
        empty = record.held_digest == ""  # a digest left in a file is never empty
        if isinstance(files, int) and "\n" not in unit + record.key:
            named.append(unit)
            keys.append(record.key)
            usual.append(files | empty << 2)
        else:
            odd[unit] = [record.key, files, empty]
    return "\n".join(named), "\n".join(keys), bytes(usual), orjson.dumps(odd), orjson.dumps(
        list(dropped))


def _digest_of(unit: str, record: UnitRecord, left: Mapping[str, str]) -> str:
    """A unit's index.json digest: as read before the write began, if it was left in the
    state's file; else as held (never a read of the file once the write began)."""
    if unit in left:
        return left[unit]
    return record.json_digest


def _same_record(old: UnitRecord | None, new: UnitRecord) -> bool:
    """Whether a unit's row need not be written again, told without reading the state's
    file: a digest left there counts as changed, unless the record is the very one read."""
    if old is new:
        return True
    if old is None or old.key != new.key or old.files != new.files:
        return False
    mine, theirs = old.held_digest, new.held_digest
    return isinstance(mine, str) and isinstance(theirs, str) and mine == theirs


def _write_meta(db: sqlite3.Connection, state: SavedState, generation: str,
                strings: StringTable, difference: Difference | None = None) -> None:
    """The state's values besides its rows (`strings`: the string table written;
    `difference`: the units replaced and dropped since the state was read, when it is
    written as a difference)."""
    spare = state.spare or SiteRecord("", {}, ())
    history, units = state.history, state.units
    differ, absent = _spare_difference(spare.units, state, difference)
    # A difference leaves the history the file holds when it is the very one read there
    # (an hour in which no story moved): 5 MB at 100,000 stories.
    kept = (difference is not None and history is not None and state.stored is not None
            and history is state.stored.history)
    meta: dict[str, Callable[[], Any]] = {
        "version": lambda: STATE_VERSION,
        "generation": lambda: generation,
        "counts": lambda: [len(state.inspected), len(state.units), len(strings.texts)],
        "strings_whole": lambda: strings.whole,
        "site_id": lambda: state.site_id,
        "site_parts": lambda: state.site_parts,
        "check_key": lambda: state.check_key,
        "loose": lambda: list(state.loose),
        "search": lambda: {name: " ".join(tokens) for name, tokens in state.search.items()},
        "media": lambda: {path: list(record) for path, record in state.media.items()},
        "keyed_under": lambda: [state.keyed_under[0], dict(state.keyed_under[1]),
                                list(state.held)],
        # The spare's units, as far as they differ from the current ones (most do not).
        "spare": lambda: {
            "site_id": spare.site_id, "loose": list(spare.loose),
            "units": {k: [u.key, _files_to_json(k, u)] for k in differ
                      if not _same_unit(units.get(k), u := spare.units[k])},
            "absent": absent},
    }
    for name, value in meta.items():
        # Made and written one at a time: the spare's may be megabytes.
        _put_meta(db, name, value())
    if not kept:  # last: the history is as large as the archive
        _write_history(db, history)


def _write_history(db: sqlite3.Connection, history: UrlHistory | None) -> None:
    """The history: its ids and paths in chunks of lines, a row for each, not a list
    for each id in JSON (a tenth of a second less to read at 100,000 stories:
    history_from_lines); the ids with more paths, and how many chunks, in meta. A row
    for each chunk: one value of the whole was three copies of it in memory as it was
    written (its text, its JSON, SQLite's), 15 MB at 100,000 stories, the peak of an
    hourly build."""
    chunks, more = lines_form(history) if history is not None else ([], None)
    db.execute("DELETE FROM history")
    db.executemany("INSERT INTO history VALUES (?, ?)", enumerate(chunks))
    _put_meta(db, "history", more)
    _put_meta(db, "history_chunks", len(chunks))


def _put_meta(db: sqlite3.Connection, name: str, value: Any) -> None:
    """One meta value, in its JSON form (as _read_state reads them all)."""
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (name, orjson.dumps(value)))


def _spare_difference(spare: Mapping[str, UnitFiles], state: SavedState,
                      difference: Difference | None) -> tuple[list[str], list[str]]:
    """The spare's units whose records are not the very ones of the current site, and
    the current site's units the spare lacks. When the spare is the site read with the
    state (an hourly build's) and `difference` says which units this build replaced and
    dropped, both come from those few, not from a pass over each site's 155,000 units."""
    units = state.units
    if difference is None or state.stored is None or spare is not state.stored.units:
        return _replaced(spare, units), [k for k in units if k not in spare]
    # A unit the spare has and the current site does not, or has under another record:
    # one of the replaced units, or one this build dropped.
    replaced = difference.replaced
    return ([k for k in replaced if k in spare] + difference.dropped,
            [k for k in replaced if k not in spare])


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly), for any
    thread: desk serve reads the texts kept in the state from the thread that builds
    and from the one that renders a saved story ahead (sqlite serialises them)."""
    uri = f"{path.resolve().as_uri()}?mode={'ro' if readonly else 'rwc'}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def search_copies(state_file: Path) -> Path:
    """The folder beside a saved state where copies of the fresh search pages are kept."""
    return state_file.with_name(state_file.stem + ".search")


def _prune(folder: Path, keep: Path) -> None:
    saved = sorted(folder.glob("*" + SUFFIX), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in saved[MAX_SAVED:]:
        if old != keep:
            old.unlink(missing_ok=True)
            # The copies of fresh search pages kept beside it go with it (its lock file
            # stays: removing a lock another process may be waiting on lets two in).
            shutil.rmtree(search_copies(old), ignore_errors=True)


# ---------------------------------------------------------------- JSON forms

def _usual_files(unit_id: str, count: int) -> tuple[str, ...]:
    check_usual(unit_id, count)
    return tuple(unit_id[1:] + name for name in USUAL_FILES[count])


def _files_to_json(unit_id: str, record: UnitFiles) -> int | list[str]:
    if isinstance(record, UnitRecord) and record.usual and record.folder == unit_id:
        return record.usual
    files = record.files
    return usual_count(unit_id, files) or list(files)


def _unit_record(unit_id: str, key: str, files: Any,
                 json_digest: str | StateFile = "") -> UnitRecord:
    # Most units' files are the count of their usual ones: told without decoding JSON,
    # and made at once when the quick test passes for the folder (155,000 units at
    # 100,000 stories, on every build).
    count = _USUAL_JSON.get(files) if isinstance(files, bytes) else None
    if count is not None and plain_folder(unit_id):
        return UnitRecord(key, count, json_digest, unit_id)
    data = (count or orjson.loads(files) if isinstance(files, bytes) else files)
    return UnitRecord.of(unit_id, key, data if isinstance(data, int)
                         else _files_from_json(unit_id, data), json_digest)


# The JSON of each count of usual files, as written.
_USUAL_JSON = {orjson.dumps(count): count for count in USUAL_FILES}


def _files_from_json(unit_id: str, data: int | list[str]) -> tuple[str, ...]:
    if isinstance(data, int):
        return _usual_files(unit_id, data)
    # relative_file checks in full what the quicker test passes for most names.
    return tuple(name if plain_folder("/" + name + "/") else relative_file("/" + name)
                 for name in data)


def _same_unit(a: Any, b: Any) -> bool:
    """Whether two records of a unit name the same key and files (most of a spare's are
    the very records of the site after it: told at once)."""
    return a is b or (a is not None and bool(a.key == b.key and a.files == b.files))


def _story_to_json(item: LoadedStory, strings: StringTable) -> tuple[list[Any], list[Any]]:
    """A story's record in two parts: what a build holds of it, with the strings it
    shares with other stories by their numbers in `strings`, and its texts (read when a
    page shows them), each with the digest of the bytes inspected."""
    s, number = item.summary, strings.number
    held = [item.digest, item.url_path, item.search_entry, s.id, number(s.newsroom),
            number(s.newsroom_title), number(s.edition), s.published_at.isoformat(),
            s.modified_at.isoformat(),
            number(s.trust), s.url, [number(url) for url in s.related_urls], number(s.beat),
            number(s.agent), [[at.isoformat(), *said] for at, *said in s.corrections],
            list(s.images)]
    return held, [item.digest, *s.texts]


def _shared_strings(summary: Summary) -> tuple[str, ...]:
    """What a story's record names by number in the state's string table."""
    return (summary.newsroom, summary.newsroom_title, summary.edition, summary.trust,
            summary.beat, summary.agent, *summary.related_urls)


# Made for every story on every build: each with its slots set directly (desk.build.slots).
_SUMMARY = slot_maker(Summary)
_STORED_TEXTS = slot_maker(StoredTexts)
_LOADED_STORY = slot_maker(LoadedStory)
_FILE_RECORD = slot_maker(FileRecord)

