"""The index: what a build leaves in `.desk-cache/` for the next one, in SQLite tables.

Enters: what a build inspected, rendered and decided (a SavedState). Leaves: the same
state read back by the next build, and the queries a build asks of the index before it
reads it (which surveyed files changed: `unvouched`).

The tables (SCHEMA; docs/internals.md explains them):

- `file`: each inspected content file, with the stat and git blob id it was inspected
  under and its findings; `story`: the story it holds, with the fields lists, feeds
  and keys are made of, and its texts; `link`: each story's related links, in order;
- `unit`: each rendered unit of the live site (a story's three files, a list page, a
  feed...) with the key it was rendered under, its files and its index.json digest;
  `spare_unit`: the spare folder's units where they differ from the live site's;
  `site`: the live site's and the spare's ids and loose files; `site_part`: the digests
  the live site's id is made of;
- `url_history`: every URL path each story id was published at; `last_publish`: the
  record of each story's last publish (desk.content.edits); `search_entry`: the
  entries of each sealed search bundle; `media`: the image files probed;
  `newsroom_title` and `held`: what the story keys were made under; `feed_entry`:
  the feed entries of the stories some feed carries, by story key (desk.render.feeds);
- `setting`: the schema version, the check key and the site key.

A build reads it whole but the stories' texts and the feed entries, which stay in the
index until a page shows them (IndexTexts, IndexEntries). It writes what changed since
it read it, in one transaction, so a build that dies leaves the last good index: the
inspections and units whose records are not the ones read, those dropped, and the URL
history's, search bundles', spare's and feed entries' rows that changed. The tables
have no indexes beyond their keys: no query asks for more yet, and each costs every
write and the file's size (one on the links' URLs was a sixth of it); an index comes
with the query that needs it. A file of another schema version, or one that cannot be
read, is no index at all: the build starts afresh and writes it whole (a new file
moved into place). The build lock (desk.build.lock) makes a build the index's only
writer from its read to its write.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from sys import intern
from typing import Any

import orjson

from desk.build.records import (
    FileRecord,
    Stat,
    UnitRecord,
    check_usual,
    findings_from_json,
    findings_json,
)
from desk.build.writer import SiteRecord, UnitFiles
from desk.content.history import UrlHistory, history_from_json, records_from_json
from desk.content.loader import ContentChanged, LoadedStory, StoredTexts, Summary, Texts
from desk.render.feeds import Entry
from desk.urls import relative_file, usual_count

# Bumped whenever SCHEMA, or what a row means, changes: a file of another version is
# no index, and the next build writes it anew.
STATE_VERSION = 22
# Saved indexes of output folders kept at most (the oldest go first).
MAX_SAVED = 20
SUFFIX = ".sqlite"

SCHEMA = """
CREATE TABLE setting (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE file (path TEXT PRIMARY KEY, mtime INTEGER NOT NULL, size INTEGER NOT NULL,
    ino INTEGER NOT NULL, blob TEXT NOT NULL, findings TEXT);
CREATE TABLE story (path TEXT PRIMARY KEY REFERENCES file ON DELETE CASCADE,
    digest TEXT NOT NULL, url_path TEXT NOT NULL, search_entry TEXT NOT NULL,
    id TEXT NOT NULL, newsroom TEXT NOT NULL, newsroom_title TEXT NOT NULL,
    edition TEXT NOT NULL, beat TEXT NOT NULL, agent TEXT NOT NULL,
    published_at TEXT NOT NULL, modified_at TEXT NOT NULL, trust TEXT NOT NULL, url TEXT,
    corrections TEXT NOT NULL, images TEXT NOT NULL, slug TEXT NOT NULL,
    headline TEXT NOT NULL, dek TEXT NOT NULL, angle TEXT NOT NULL,
    trust_text TEXT NOT NULL, run_id TEXT NOT NULL, reviewed_by TEXT NOT NULL);
CREATE TABLE link (story TEXT NOT NULL REFERENCES story ON DELETE CASCADE,
    n INTEGER NOT NULL, url TEXT NOT NULL, headline TEXT NOT NULL,
    PRIMARY KEY (story, n)) WITHOUT ROWID;
CREATE TABLE unit (id TEXT PRIMARY KEY, key TEXT NOT NULL, usual INTEGER NOT NULL,
    files TEXT, digest TEXT NOT NULL);
CREATE TABLE spare_unit (id TEXT PRIMARY KEY, key TEXT, usual INTEGER, files TEXT);
CREATE TABLE site (name TEXT PRIMARY KEY, id TEXT NOT NULL, loose TEXT NOT NULL);
CREATE TABLE site_part (name TEXT PRIMARY KEY, digest TEXT NOT NULL);
CREATE TABLE url_history (id TEXT NOT NULL, n INTEGER NOT NULL, path TEXT NOT NULL,
    PRIMARY KEY (id, n)) WITHOUT ROWID;
CREATE TABLE last_publish (id TEXT PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE search_entry (bundle TEXT NOT NULL, n INTEGER NOT NULL, entry TEXT NOT NULL,
    PRIMARY KEY (bundle, n)) WITHOUT ROWID;
CREATE TABLE media (path TEXT PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE newsroom_title (newsroom TEXT PRIMARY KEY, title TEXT NOT NULL);
CREATE TABLE held (url_path TEXT PRIMARY KEY);
CREATE TABLE feed_entry (key TEXT PRIMARY KEY, modified_at TEXT NOT NULL, rss TEXT NOT NULL,
    atom TEXT NOT NULL, json TEXT NOT NULL);
"""

_STORY_COLUMNS = ("path, digest, url_path, search_entry, id, newsroom, newsroom_title, "
                  "edition, beat, agent, published_at, modified_at, trust, url, "
                  "corrections, images")
_TEXT_COLUMNS = "slug, headline, dek, angle, trust_text, run_id, reviewed_by"
# A sealed search bundle's name, as desk.search.bundles makes them.
_SEALED_NAME = re.compile(r"s-[0-9a-f]{16}")


@dataclass(frozen=True)
class Stored:
    """What the index's file held when this state was read or last written: the
    records as objects, so that a write names what changed since by identity."""

    file: Path
    inspected: Mapping[str, FileRecord]
    units: Mapping[str, UnitRecord]
    history: UrlHistory | None
    search: Mapping[str, tuple[str, ...]]
    media: Mapping[str, Sequence[Any]]
    entries: frozenset[str]  # the keys of the feed entries


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
    # Feed entries by story key (the index's, and those made since), and the keys of
    # those to keep: the stories some feed carries (None: the ones the index holds).
    entries: Mapping[str, Entry] = field(default_factory=dict)
    entry_keys: frozenset[str] | None = None
    # The digests of the parts of `units` that `site_id` is made of (keys.site_parts),
    # when known: an hourly build makes again only those of the parts it touched.
    site_parts: dict[str, str] | None = None
    stored: Stored | None = field(default=None, compare=False, repr=False)
    # An inspection has brought `inspected` up to date since `units` were last advanced
    # (a build that did not finish): what changed since the units' build is not known.
    inspected_ahead: bool = field(default=False, compare=False, repr=False)
    # What the build that advanced `units` replaced and dropped, when its ledger said.
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

    def read_unchanged(self, path: str) -> bool:
        """Whether the inspection of `path` holds the story read with the index (its
        file unchanged since the last build, or only restated)."""
        stored = self.stored.inspected.get(path) if self.stored is not None else None
        record = self.inspected.get(path)
        return (stored is not None and record is not None and record.story is not None
                and record.story is stored.story)

    def adopt_inspections(self, other: SavedState) -> None:
        """Start from another state's inspections of the content (and of its images) when
        this one has none: a preview's first start, from its site's build. They hold for
        the files as they were, under the check key they were made under."""
        if not self.inspected and other.inspected:
            self.inspected, self.check_key = dict(other.inspected), other.check_key
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

    def advance(self, live_id: str | None, units: dict[str, UnitRecord],
                loose: tuple[str, ...], site_id: str,
                parts: dict[str, str] | None = None,
                changes: UnitChanges | None = None) -> None:
        """Describe the site just swapped in (`parts`: its units' parts' digests, when
        made; `changes`: what the build did to the units it started from, as its ledger
        tells it); the one it replaced becomes the spare."""
        known = self.describes(live_id)
        self.unit_changes = changes
        self.spare = self.site() if known else None
        self.units, self.loose = units, loose
        self.site_id, self.site_parts = site_id, parts
        self.inspected_ahead = False


# ---------------------------------------------------------------- reading

def read_state(path: Path, spare: bool = True, records: bool = True) -> SavedState:
    """The index saved in `path`, or an empty state if there is none, it is of another
    schema version or it cannot be read; without the spare's units unless `spare` (of
    no use when there is no spare folder); without its inspections and units unless
    `records` (its site and URL history are read all the same).

    The file stays open while its stories' texts may be read from it (IndexTexts)."""
    if not path.is_file():
        return SavedState()
    db: sqlite3.Connection | None = None
    try:
        db = _connect(path, readonly=True)
        db.execute("BEGIN")  # one snapshot of the file
        state = _read_state(db, path, spare, records)
        db.execute("COMMIT")
        return state
    except (sqlite3.Error, OSError, ValueError, KeyError, TypeError, IndexError,
            AttributeError):
        if db is not None:
            db.close()
        return SavedState()


def _read_state(db: sqlite3.Connection, path: Path, spare: bool, records: bool
                ) -> SavedState:
    settings = dict(db.execute("SELECT name, value FROM setting"))
    if settings.get("version") != str(STATE_VERSION):
        raise ValueError("another schema version")
    sites = {name: (site_id, _loose(loose))
             for name, site_id, loose in db.execute("SELECT name, id, loose FROM site")}
    site_id, loose = sites.get("live", ("", ()))
    inspected = _read_inspected(db, IndexTexts(db, path)) if records else {}
    units = _read_units(db, "SELECT id, key, usual, files, digest FROM unit") if records else {}
    parts = dict(db.execute("SELECT name, digest FROM site_part"))
    has_parts = settings.get("site_parts") == "known"
    history = _read_history(db) if settings.get("history") == "known" else None
    search: dict[str, list[str]] = {}
    for bundle, entry in db.execute("SELECT bundle, entry FROM search_entry ORDER BY bundle, n"):
        if _SEALED_NAME.fullmatch(bundle) is None:  # it names a folder of the site
            raise ValueError(f"{bundle!r} is not a search bundle")
        search.setdefault(bundle, []).append(entry)
    media = {p: orjson.loads(r) for p, r in db.execute("SELECT path, record FROM media")}
    titles = tuple(db.execute("SELECT newsroom, title FROM newsroom_title ORDER BY rowid"))
    held = tuple(p for (p,) in db.execute("SELECT url_path FROM held ORDER BY url_path"))
    entries = IndexEntries(db, path)
    state = SavedState(
        site_id=site_id, units=units, loose=loose, check_key=settings.get("check_key", ""),
        inspected=inspected,
        spare=_read_spare(db, sites.get("spare"), units) if spare and records else None,
        history=history, search={b: tuple(e) for b, e in search.items()}, media=media,
        keyed_under=(settings.get("site_key", ""), titles), held=held,
        site_parts=parts if has_parts else None, entries=entries)
    state.stored = Stored(path, dict(inspected), units, history, dict(state.search), media,
                          frozenset(entries))
    return state


def _read_inspected(db: sqlite3.Connection, texts: IndexTexts) -> dict[str, FileRecord]:
    """Every inspected file's record, its story's texts left in the index."""
    links: dict[str, list[str]] = {}
    for story, url in db.execute("SELECT story, url FROM link ORDER BY story, n"):
        links.setdefault(story, []).append(url)
    stories = {row[0]: _story(row, links.get(row[0], ()), texts)
               for row in db.execute(f"SELECT {_STORY_COLUMNS} FROM story")}  # noqa: S608
    return {path: FileRecord(Stat(mtime, size, ino), stories.get(path),
                             findings_from_json(findings), blob)
            for path, mtime, size, ino, blob, findings in db.execute(
                "SELECT path, mtime, size, ino, blob, findings FROM file")}


def _story(row: Sequence[Any], links: Iterable[str], texts: IndexTexts) -> LoadedStory:
    (path, digest, url_path, entry, story_id, newsroom, title, edition, beat, agent,
     published, modified, trust, url, corrections, images) = row
    published_at = datetime.fromisoformat(published)
    # The names lists group by are shared, one string each, by every story of a group.
    summary = Summary(
        story_id, intern(newsroom), intern(title), intern(edition), published_at,
        published_at if modified == published else datetime.fromisoformat(modified),
        intern(trust), url, tuple(links), intern(beat), intern(agent),
        tuple((datetime.fromisoformat(at), said, kind)
              for at, said, kind in orjson.loads(corrections)) if corrections != "[]" else (),
        StoredTexts(texts, path, digest),
        tuple(orjson.loads(images)) if images != "[]" else ())
    return LoadedStory(path, summary, digest, url_path, entry)


def _read_units(db: sqlite3.Connection, query: str) -> dict[str, UnitRecord]:
    return {unit: _unit(unit, key, usual, files, digest)
            for unit, key, usual, files, digest in db.execute(query)}


def _unit(unit: str, key: str, usual: int, files: str | None, digest: str) -> UnitRecord:
    if usual:
        check_usual(unit, usual)
        return UnitRecord(key, usual, digest, unit)
    return UnitRecord.of(unit, key, tuple(relative_file("/" + name)
                                          for name in orjson.loads(files or "[]")), digest)


def _read_spare(db: sqlite3.Connection, site: tuple[str, tuple[str, ...]] | None,
                units: dict[str, UnitRecord]) -> SiteRecord | None:
    if site is None or not site[0]:
        return None
    changed: dict[str, UnitRecord] = {}
    absent: set[str] = set()
    for unit, key, usual, files in db.execute("SELECT id, key, usual, files FROM spare_unit"):
        if key is None:
            absent.add(unit)
        else:
            changed[unit] = _unit(unit, key, usual, files, "")
    return SiteRecord(site[0], Overlay(units, changed, frozenset(absent)), site[1])


def _read_history(db: sqlite3.Connection) -> UrlHistory:
    urls: dict[str, list[str]] = {}
    for story_id, url_path in db.execute("SELECT id, path FROM url_history ORDER BY id, n"):
        urls.setdefault(story_id, []).append(url_path)
    found = history_from_json(urls)  # checked: a path outside the site is no index
    records = dict(db.execute("SELECT id, record FROM last_publish ORDER BY id").fetchall())
    return found.published_as(records_from_json(records)) if records else found


def _loose(data: str) -> tuple[str, ...]:
    return tuple(relative_file("/" + name) for name in orjson.loads(data))


class IndexReader:
    """Rows left in the index until they are needed, read through the connection the
    state was read with, which sees that file even when a later build replaces it; a
    forked process opens its own (a connection must not cross a fork)."""

    def __init__(self, db: sqlite3.Connection, file: Path) -> None:
        self._db, self._file, self._pid = db, file, os.getpid()

    def _connection(self) -> sqlite3.Connection:
        if self._pid != os.getpid():
            self._db, self._pid = _connect(self._file, readonly=True), os.getpid()
        return self._db


class IndexTexts(IndexReader):
    """The stories' texts (headline, dek...), left in the index until a page shows them.
    Texts whose story's digest is not the one inspected mean the file was changed by
    another build meanwhile: ContentChanged, as for a story file."""

    def texts(self, path: str, digest: str) -> Texts:
        """The texts of the story file `path` inspected with bytes of this digest."""
        db = self._connection()
        try:
            row = db.execute(f"SELECT {_TEXT_COLUMNS} FROM story "  # noqa: S608
                             "WHERE path = ? AND digest = ?", (path, digest)).fetchone()
            related = tuple(h for (h,) in db.execute(
                "SELECT headline FROM link WHERE story = ? ORDER BY n", (path,)))
        except sqlite3.Error:
            row = None
        if row is None:
            raise ContentChanged(path)
        return Texts._make([*row, related])


class IndexEntries(IndexReader, Mapping[str, Entry]):
    """The feed entries kept in the index, by story key: their keys read with the state,
    each entry when a feed asks for it."""

    def __init__(self, db: sqlite3.Connection, file: Path) -> None:
        super().__init__(db, file)
        self._keys = frozenset(k for (k,) in db.execute("SELECT key FROM feed_entry"))

    def __getitem__(self, key: str) -> Entry:
        row = None
        if key in self._keys:
            with contextlib.suppress(sqlite3.Error):
                row = self._connection().execute(
                    "SELECT modified_at, rss, atom, json FROM feed_entry WHERE key = ?",
                    (key,)).fetchone()
        if row is None:  # gone with a later build's write: made again from the file
            raise KeyError(key)
        return Entry(datetime.fromisoformat(row[0]), *row[1:])

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


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


# ---------------------------------------------------------------- the survey's query

def unvouched(path: Path, stats: Mapping[str, Stat | None], clean: Mapping[str, str] | None
              ) -> frozenset[str] | None:
    """Of the files surveyed with these stats (and git's blob ids of its clean files, if
    asked), those whose inspection the index in `path` does not hold good by their stat
    or by git's word (see git_may_vouch); None when it cannot be read. One query: the
    survey in a temporary table, joined with `file`."""
    try:
        with contextlib.closing(_connect(path, readonly=True)) as db:
            (version,) = db.execute(
                "SELECT value FROM setting WHERE name = 'version'").fetchone()
            if version != str(STATE_VERSION):
                return None
            db.execute("CREATE TEMP TABLE seen (path TEXT PRIMARY KEY, mtime INTEGER, "
                       "size INTEGER, ino INTEGER, blob TEXT)")
            get = (clean or {}).get
            db.executemany("INSERT INTO seen VALUES (?, ?, ?, ?, ?)",
                           ((p, *s, get(p)) for p, s in stats.items() if s is not None))
            vouched = {p for (p,) in db.execute(_VOUCHED)}
            return frozenset(p for p in stats if p not in vouched)
    except (sqlite3.Error, OSError, TypeError):
        return None


# The surveyed files whose saved inspection holds: same stat, or (a story) git holds
# the file with the blob id inspected at the same size (records.git_may_vouch, in SQL).
_VOUCHED = """
SELECT seen.path FROM seen JOIN file USING (path)
WHERE (seen.mtime = file.mtime AND seen.size = file.size AND seen.ino = file.ino)
   OR (seen.blob = file.blob AND file.blob != '' AND seen.size = file.size
       AND EXISTS (SELECT 1 FROM story WHERE story.path = file.path))
"""


# ---------------------------------------------------------------- writing

def write_state(state: SavedState, path: Path) -> None:
    """Save a state: as what changed since it was read from or written to `path`, in
    one transaction; else whole, into a new file moved into place. Keep at most
    MAX_SAVED indexes in its folder."""
    stored = state.stored
    if stored is None or stored.file != path or not _write_changes(state, stored, path):
        _write_whole(state, path)
    state.stored = Stored(path, dict(state.inspected), state.units, state.history,
                          dict(state.search), state.media, _entry_keys(state))
    _prune(path.parent, keep=path)


def _write_changes(state: SavedState, stored: Stored, path: Path) -> bool:
    """Write what changed since `stored`; False when the file is not an index of this
    version (then it is written whole)."""
    try:
        with contextlib.closing(_connect(path, readonly=False)) as db:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute("SELECT value FROM setting WHERE name = 'version'").fetchone()
            if row is None or row[0] != str(STATE_VERSION):
                db.rollback()
                return False
            _write_inspected(db, state, stored.inspected)
            _write_spare(db, state)  # before the units: it reads what the ledger said
            _write_units(db, state, stored.units)
            _write_rest(db, state, stored)
            db.execute("COMMIT")
    except sqlite3.Error:
        return False
    return True


def _write_whole(state: SavedState, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.unlink(missing_ok=True)
    with contextlib.closing(_connect(temporary, readonly=False)) as db:
        # A new file, moved into place only when complete: no journal needed.
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        db.execute("BEGIN")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        _write_inspected(db, state, {})
        _write_spare(db, state)
        _write_units(db, state, {})
        _write_rest(db, state, None)
        db.execute("COMMIT")
    os.replace(temporary, path)


def _write_inspected(db: sqlite3.Connection, state: SavedState,
                     before: Mapping[str, FileRecord]) -> None:
    """The rows of the inspections that are not the records `before` holds, and the
    deletion of those it holds that the state no longer has."""
    inspected = state.inspected
    db.executemany("DELETE FROM file WHERE path = ?",
                   [(p,) for p in before if p not in inspected])
    changed = [(p, r) for p, r in inspected.items() if before.get(p) is not r]
    restated = [(p, r) for p, r in changed if (old := before.get(p)) is not None
                and old.story is r.story and old.findings == r.findings]
    db.executemany("UPDATE file SET mtime = ?, size = ?, ino = ?, blob = ? WHERE path = ?",
                   [(*r.stat, r.blob, p) for p, r in restated])
    anew = [(p, r) for p, r in changed if (old := before.get(p)) is None
            or old.story is not r.story or old.findings != r.findings]
    lost: list[str] = []
    for p, r in anew:
        story = r.story
        try:
            texts = story.summary.texts if story is not None else None
        except ContentChanged:  # left in a file another build rewrote: inspect again
            lost.append(p)
            continue
        db.execute("DELETE FROM file WHERE path = ?", (p,))  # its story and links too
        db.execute("INSERT INTO file VALUES (?, ?, ?, ?, ?, ?)",
                   (p, *r.stat, r.blob, findings_json(r.findings)))
        if story is not None and texts is not None:
            _write_story(db, story, texts)
    for p in lost:
        db.execute("DELETE FROM file WHERE path = ?", (p,))
        del inspected[p]


def _write_story(db: sqlite3.Connection, item: LoadedStory, texts: Texts) -> None:
    s = item.summary
    db.execute("INSERT INTO story VALUES "
               "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (item.path, item.digest, item.url_path, item.search_entry, s.id, s.newsroom,
                s.newsroom_title, s.edition, s.beat, s.agent, s.published_at.isoformat(),
                s.modified_at.isoformat(), s.trust, s.url,
                orjson.dumps([[at.isoformat(), said, kind]
                              for at, said, kind in s.corrections]).decode(),
                orjson.dumps(list(s.images)).decode(), texts.slug, texts.headline, texts.dek,
                texts.angle, texts.trust_text, texts.run_id, texts.reviewed_by))
    db.executemany("INSERT INTO link VALUES (?, ?, ?, ?)",
                   [(item.path, n, url, headline) for n, (url, headline) in enumerate(
                       zip(s.related_urls, texts.related_headlines, strict=True))])


def _write_units(db: sqlite3.Connection, state: SavedState,
                 before: Mapping[str, UnitRecord]) -> None:
    """The rows of the live site's units that are not the records `before` holds, and
    the deletion of those it holds that the live site no longer has."""
    units = state.units
    replaced, dropped = _units_since(state, before)
    db.executemany("DELETE FROM unit WHERE id = ?", [(k,) for k in dropped])
    db.executemany("INSERT OR REPLACE INTO unit VALUES (?, ?, ?, ?, ?)",
                   [(k, u.key, *_unit_files(k, u), u.json_digest)
                    for k in replaced if before.get(k) != (u := units[k])])
    state.unit_changes = UnitChanges(units, [], [])  # written: the next write starts here


def _units_since(state: SavedState, base: Mapping[str, object]
                 ) -> tuple[list[str], list[str]]:
    """The live site's units whose records are not the very ones of `base`, and the units
    of `base` it lacks: as the ledger told them when it started from `base` (an hour's
    few), else from a pass over each (0.06 s at 100,000 stories)."""
    units, changes = state.units, state.unit_changes
    if changes is not None and changes.base is base:
        return changes.replaced, changes.dropped
    return ([k for k, u in units.items() if base.get(k) is not u],
            [k for k in base if k not in units])


def _unit_files(unit: str, record: UnitFiles) -> tuple[int, str | None]:
    """A unit's files as a row holds them: the count of its usual files, else a list."""
    count = record.usual or usual_count(unit, record.files)
    return (count, None) if count else (0, orjson.dumps(list(record.files)).decode())


def _write_rest(db: sqlite3.Connection, state: SavedState, stored: Stored | None) -> None:
    """The settings, sites, parts, URL history, search bundles, media and what
    the story keys were made under: each table rewritten when it changed."""
    settings = {"version": str(STATE_VERSION), "check_key": state.check_key,
                "site_key": state.keyed_under[0],
                "site_parts": "known" if state.site_parts is not None else "",
                "history": "known" if state.history is not None else ""}
    db.executemany("INSERT OR REPLACE INTO setting VALUES (?, ?)", settings.items())
    spare = state.spare or SiteRecord("", {}, ())
    db.execute("DELETE FROM site")
    db.executemany("INSERT INTO site VALUES (?, ?, ?)", [
        ("live", state.site_id, orjson.dumps(list(state.loose)).decode()),
        ("spare", spare.site_id, orjson.dumps(list(spare.loose)).decode())])
    db.execute("DELETE FROM site_part")
    db.executemany("INSERT INTO site_part VALUES (?, ?)", (state.site_parts or {}).items())
    if stored is None or state.history is not stored.history:
        _write_history(db, state.history, stored.history if stored is not None else None)
    if stored is None or state.search != stored.search:
        db.execute("DELETE FROM search_entry")
        db.executemany("INSERT INTO search_entry VALUES (?, ?, ?)",
                       [(b, n, e) for b, entries in state.search.items()
                        for n, e in enumerate(entries)])
    if stored is None or state.media is not stored.media:
        db.execute("DELETE FROM media")
        db.executemany("INSERT INTO media VALUES (?, ?)",
                       [(p, orjson.dumps(list(r)).decode()) for p, r in state.media.items()])
    db.execute("DELETE FROM newsroom_title")
    db.executemany("INSERT INTO newsroom_title VALUES (?, ?)", state.keyed_under[1])
    db.execute("DELETE FROM held")
    db.executemany("INSERT INTO held VALUES (?)", [(p,) for p in state.held])
    _write_entries(db, state, stored.entries if stored is not None else frozenset())


def _entry_keys(state: SavedState) -> frozenset[str]:
    return state.entry_keys if state.entry_keys is not None else frozenset(state.entries)


def _write_entries(db: sqlite3.Connection, state: SavedState, before: frozenset[str]) -> None:
    """The feed entries to keep that the index lacks, and the deletion of the others."""
    keep, entries = _entry_keys(state), state.entries
    db.executemany("DELETE FROM feed_entry WHERE key = ?", [(k,) for k in before - keep])
    rows = []
    for key in sorted(keep - before):
        with contextlib.suppress(KeyError):  # kept in a file another build rewrote
            entry = entries[key]
            rows.append((key, entry.modified_at.isoformat(), entry.rss, entry.atom, entry.json))
    db.executemany("INSERT OR REPLACE INTO feed_entry VALUES (?, ?, ?, ?, ?)", rows)


def _write_spare(db: sqlite3.Connection, state: SavedState) -> None:
    """The spare's units where they differ from the live site's: a changed record, or
    none (key NULL) for a unit of the live site the spare lacks (after an hour, the spare
    is the site the ledger started from: they differ in the units it told)."""
    units = state.units
    spare = state.spare or SiteRecord("", {}, ())
    replaced, dropped = _units_since(state, spare.units)
    differ = [*(k for k in replaced if k in spare.units), *dropped]
    absent = [k for k in replaced if k not in spare.units]
    db.execute("DELETE FROM spare_unit")
    db.executemany("INSERT INTO spare_unit VALUES (?, ?, ?, ?)",
                   [(k, u.key, *_unit_files(k, u)) for k in differ
                    if units.get(k) != (u := spare.units[k])])
    db.executemany("INSERT INTO spare_unit VALUES (?, NULL, NULL, NULL)",
                   [(k,) for k in absent])


def _write_history(db: sqlite3.Connection, history: UrlHistory | None,
                   before: UrlHistory | None) -> None:
    """The URL history's rows of the ids whose paths changed since `before`."""
    urls = history.urls if history is not None else {}
    old = before.urls if before is not None else None
    if old is None:
        db.execute("DELETE FROM url_history")
        changed: Iterable[str] = urls
    else:
        changed = [k for k, v in urls.items() if old.get(k) != v]
        gone = [(k,) for k in old if k not in urls]
        db.executemany("DELETE FROM url_history WHERE id = ?", [*gone, *((k,) for k in changed)])
    db.executemany("INSERT INTO url_history VALUES (?, ?, ?)",
                   [(k, n, p) for k in changed for n, p in enumerate(urls[k])])
    _write_last_publishes(db, history, before)


def _write_last_publishes(db: sqlite3.Connection, history: UrlHistory | None,
                          before: UrlHistory | None) -> None:
    """The records of last publishes that changed since `before` (an hour's few, a save's
    one), and the deletion of those gone; all of them when `before` is not known."""
    records = history.published if history is not None else {}
    if before is None:
        db.execute("DELETE FROM last_publish")
    old = before.published if before is not None else {}
    db.executemany("DELETE FROM last_publish WHERE id = ?",
                   [(k,) for k in old if k not in records])
    db.executemany("INSERT OR REPLACE INTO last_publish VALUES (?, ?)",
                   [(k, v) for k, v in records.items() if old.get(k) != v])


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly), for any
    thread: desk serve reads the texts kept in the index from the thread that builds
    and from the one that renders a saved story ahead (sqlite serialises them)."""
    uri = f"{path.resolve().as_uri()}?mode={'ro' if readonly else 'rwc'}"
    db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA foreign_keys = ON")
    return db


def snapshot(index: Path, copy: Path) -> bool:
    """Copy an index as it stands between two builds' writes (SQLite's backup), into a
    new file at `copy` (a reader of the old one keeps it); False when it cannot be read."""
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.unlink(missing_ok=True)
        with contextlib.closing(_connect(index, readonly=True)) as source, \
                contextlib.closing(sqlite3.connect(copy)) as target:
            source.backup(target)
    except (sqlite3.Error, OSError):
        copy.unlink(missing_ok=True)
        return False
    return True


def search_copies(state_file: Path) -> Path:
    """The folder beside an index where copies of the fresh search pages are kept."""
    return state_file.with_name(state_file.stem + ".search")


def _prune(folder: Path, keep: Path) -> None:
    saved = sorted(folder.glob("*" + SUFFIX), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in saved[MAX_SAVED:]:
        if old != keep:
            old.unlink(missing_ok=True)
            # The copies of fresh search pages kept beside it go with it (its lock file
            # stays: removing a lock another process may be waiting on lets two in).
            shutil.rmtree(search_copies(old), ignore_errors=True)
