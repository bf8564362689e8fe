"""The build cache: what a build remembers for the next one, so unchanged work is skipped.

Two parts, kept apart:

- **saved state** (`SavedState`), written to `.desk-cache/` after every `desk build`:
  - inspected story files (summary, digest, git blob id and findings) by path, valid
    while the file's stat is unchanged, or when only the stat changed (a fresh checkout)
    while git holds the file unchanged with the same blob id (desk.gitblobs), or else
    while its digest is the same; and all only while the check key is the same;
  - rendered units (a story's three files, a list page and its index.json, a feed...)
    with the key each was rendered under;
  - the spare: what the site before the current one holds, so the writer can recycle
    that folder as its next staging folder (see desk.writer);
  - the sealed search bundles (desk.bundles): each one's entries as they were indexed,
    which a build cannot learn from the site (what was sealed, and in which version);
  - the URL history (desk.history): every URL each story id was published at. Unlike
    the rest it is not a cache but the site's memory, which the site carries too (its
    desk-urls.json): `recall_history` says which copy a build starts from.
- **session** (`Session`), kept in memory by a long-running process (desk serve) and
  never saved: the template environment, feed entries, unit keys, the files of the
  live folder, the findings across stories, the content's file lists.

The saved state is tied to one output folder by the site id in its marker; state that
does not match the folder on disk is ignored, and a build without any cache is always
correct.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from desk.checks import KeptChecks
from desk.findings import Finding
from desk.gitblobs import blob_id, clean_blobs
from desk.history import UrlHistory, history_from_json, read_history_file
from desk.keys import KeyCache, SiteIds
from desk.listing import ContentListing
from desk.loader import LoadedStory, Summary
from desk.render.context import Recall
from desk.urls import URL_HISTORY, relative_file
from desk.writer import Spare, site_id_of

CACHE_VERSION = 7
# Saved states of output folders kept at most (the oldest go first).
MAX_SAVED = 20

Stat = tuple[int, int, int]
Inspected = tuple[LoadedStory | None, tuple[Finding, ...]]


@dataclass(frozen=True)
class UnitRecord:
    """What was rendered for one unit: its key, its files and its index.json digest."""

    key: str
    files: tuple[str, ...]
    json_digest: str = ""


@dataclass(frozen=True)
class FileRecord:
    """A story file's inspection, valid while its stat is unchanged (or its blob id, in
    git's view, when it has one: the blob id of the bytes inspected)."""

    stat: Stat
    story: LoadedStory | None
    findings: tuple[Finding, ...]
    blob: str = ""
    saved: Any = None  # its JSON form when read from disk (saved again as is)

    def to_json(self) -> Any:
        """The JSON form of this record."""
        if self.saved is not None:
            return self.saved
        return [list(self.stat), _story_to_json(self.story),
                [_finding_to_json(f) for f in self.findings], self.blob]


@dataclass
class SavedState:
    """What the next build needs to know of this one."""

    site_id: str = ""
    units: dict[str, UnitRecord] = field(default_factory=dict)
    loose: tuple[str, ...] = ()  # files of the current site outside any unit
    check_key: str = ""  # what the inspected files' findings were checked against
    inspected: dict[str, FileRecord] = field(default_factory=dict)
    spare: Spare | None = None
    history: UrlHistory | None = None  # after the build that made the site `site_id`
    # The sealed search bundles of the site `site_id`: name → entry tokens.
    search: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def describes(self, live_id: str | None) -> bool:
        """True when this state is of the live site (`live_id`: its id)."""
        return bool(self.site_id) and self.site_id == live_id

    def units_of(self, live_id: str | None) -> dict[str, UnitRecord]:
        """The units of the live site, if this state describes it (else none)."""
        return self.units if self.describes(live_id) else {}

    def search_of(self, live_id: str | None) -> dict[str, tuple[str, ...]]:
        """The sealed search bundles of the live site, if this state describes it."""
        return self.search if self.describes(live_id) else {}

    def disown(self) -> None:
        """Forget the sites this state describes (their files cannot be trusted); keep
        the inspections and the URL history."""
        self.site_id, self.units, self.loose, self.spare = "", {}, (), None
        self.search = {}

    def advance(self, live_id: str | None, units: dict[str, UnitRecord],
                loose: tuple[str, ...], site_id: str) -> None:
        """Describe the site just swapped in; the one it replaced becomes the spare."""
        known = self.describes(live_id)
        self.spare = Spare(self.site_id, dict(self.units), self.loose) if known else None
        self.units, self.loose = units, loose
        self.site_id = site_id


@dataclass
class Session:
    """What a long-running process (desk serve) caches between builds; never saved."""

    environment: tuple[str, Any] | None = None  # (what it was made from, the environment)
    feed_entries: dict[str, Any] = field(default_factory=dict)  # by story key
    keys: KeyCache = field(default_factory=KeyCache)
    present: set[str] = field(default_factory=set)  # files of the live folder
    # The files the watcher saw change since the last build (None: not known, so every
    # file's stat is taken); the others are recalled without touching the disk.
    changed: set[str] | None = None
    # The checks across stories, kept up to date for the stories that changed.
    across: KeptChecks = field(default_factory=KeptChecks.kept)
    # The content's file lists, kept up to date from `changed`.
    listing: ContentListing = field(default_factory=ContentListing)
    # What the pages around the stories were made from, and what it made.
    recall: Recall = field(default_factory=Recall)
    # The ids of the sites built, made from the units that changed.
    site_ids: SiteIds = field(default_factory=SiteIds)


@dataclass
class BuildCache:
    """The saved state (and where it is saved, if anywhere) plus a session, if any."""

    state: SavedState = field(default_factory=SavedState)
    file: Path | None = None
    session: Session | None = None
    # A URL history given by the caller (`desk build --url-history`, read from the last
    # deploy): used when neither the saved state nor the output folder has one.
    history: UrlHistory | None = None

    @classmethod
    def saved_for(cls, cache_dir: Path, out_dir: Path) -> BuildCache:
        """The state saved for an output folder (empty when none or unreadable)."""
        where = hashlib.sha256(str(out_dir.resolve()).encode()).hexdigest()[:12]
        file = cache_dir / f"{out_dir.name}-{where}.json"
        return cls(read_state(file), file)

    def save(self) -> None:
        """Write the state for the next process (atomically); a failure only costs time."""
        if self.file is None:
            return
        with contextlib.suppress(OSError):
            write_state(self.state, self.file)

    def recall_history(self, out_dir: Path) -> tuple[UrlHistory, list[Finding]]:
        """The URL history a build into `out_dir` starts from: the saved state's, when it
        describes the site there (or there is none); else that site's desk-urls.json;
        else the given one; else none. Findings when a history file is unreadable."""
        state = self.state
        live = site_id_of(out_dir)
        if state.history is not None and (live is None or live == state.site_id):
            return state.history, []
        found, problems = read_history_file(out_dir / relative_file(URL_HISTORY))
        if found is not None or problems:
            return found or UrlHistory(), problems
        return self.history or state.history or UrlHistory(), []

    def forget(self) -> None:
        """Drop the saved state (after a failed write: the next build starts afresh)."""
        self.state = SavedState()
        if self.file is not None:
            self.file.unlink(missing_ok=True)


def remembered_history(cache_dir: Path, out_dir: Path, given: UrlHistory | None = None
                       ) -> tuple[UrlHistory, list[Finding]]:
    """The URL history the next `desk build` into `out_dir` would start from, `given`
    the last deploy's (for desk check and desk serve, which write no site there)."""
    cache = BuildCache.saved_for(cache_dir, out_dir)
    cache.history = given
    return cache.recall_history(out_dir)


def file_stat(path: str) -> Stat | None:
    """The stat values that change whenever a file's bytes do."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class InspectionCache:
    """The saved inspections of story files, as the loader asks for them (`content`: the
    content folder, when git may be asked which of its files are unchanged)."""

    def __init__(self, state: SavedState, check_key: str,
                 changed: set[str] | None = None, content: Path | None = None) -> None:
        self._state = state
        self._changed = changed
        self._content = content
        self._blobs: dict[str, str] | None = None
        if state.check_key != check_key:
            state.inspected.clear()
            state.check_key = check_key
            self._changed = None

    def unchanged(self, path: str) -> Inspected | None:
        """The inspection of a file known unchanged without a look at it (the caller
        knows which files changed), if any."""
        if self._changed is None or path in self._changed:
            return None
        known = self._state.inspected.get(path)
        return (known.story, known.findings) if known is not None else None

    def recall(self, path: str, stat: Stat | None) -> Inspected | None:
        """The inspection of an unchanged file, if known."""
        known = self._state.inspected.get(path)
        if known is None or stat is None:
            return None
        if known.stat != stat:
            # Touched but maybe not changed (a fresh checkout): git, else the bytes decide.
            blob = self._same_bytes(path, stat, known)
            if blob is None:
                return None
            saved = None if known.saved is None else [list(stat), *known.saved[1:3], blob]
            self._state.inspected[path] = FileRecord(stat, known.story, known.findings, blob,
                                                     saved)
        return known.story, known.findings

    def remember(self, path: str, stat: Stat | None, result: Inspected) -> None:
        """Remember a file's inspection under the stat taken before it was read, with the
        blob id of the bytes inspected."""
        if stat is not None:
            story = result[0]
            self._state.inspected[path] = FileRecord(stat, *result,
                                                     story.blob if story is not None else "")

    def _same_bytes(self, path: str, stat: Stat, known: FileRecord) -> str | None:
        """The blob id of a touched file's bytes when they are the ones `known` was
        inspected from (None: they are not, or cannot be read): git's word for a file it
        holds unchanged, of the same size; else its digest, read."""
        if known.story is None:
            return None
        if (known.blob and stat[1] == known.stat[1]
                and self._git_blobs().get(path) == known.blob):
            return known.blob
        data = _bytes_of(path)
        if data is None or hashlib.sha256(data).hexdigest() != known.story.digest:
            return None
        return blob_id(data)

    def _git_blobs(self) -> dict[str, str]:
        """The blob ids of the content files git holds unchanged (asked once)."""
        if self._blobs is None:
            self._blobs = clean_blobs(self._content) if self._content is not None else {}
        return self._blobs


def write_state(state: SavedState, path: Path) -> None:
    """Save a state atomically; keep at most MAX_SAVED states in its folder."""
    spare = state.spare or Spare("", {}, ())
    data = {
        "version": CACHE_VERSION,
        "site_id": state.site_id,
        "units": {k: [u.key, _files_to_json(k, u.files), u.json_digest]
                  for k, u in state.units.items()},
        "check_key": state.check_key,
        "inspected": {k: p.to_json() for k, p in state.inspected.items()},
        "loose": list(state.loose),
        "history": state.history.to_json() if state.history is not None else None,
        "search": {name: " ".join(tokens) for name, tokens in state.search.items()},
        # The spare's units, as far as they differ from the current ones (most do not).
        "spare": {"site_id": spare.site_id, "loose": list(spare.loose),
                  "units": {k: [u.key, _files_to_json(k, u.files)]
                            for k, u in spare.units.items()
                            if k not in state.units or not _same_unit(state.units[k], u)},
                  "absent": [k for k in state.units if k not in spare.units]},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(orjson.dumps(data))
    os.replace(temporary, path)
    _prune(path.parent, keep=path)


def read_state(path: Path) -> SavedState:
    """A saved state, or an empty one if there is none or it is unreadable."""
    with _collector_paused():
        return _read_state(path)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection meanwhile: reading a large state makes no cycles,
    while the collector's scans of the growing heap cost about as much as the reading."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _read_state(path: Path) -> SavedState:
    try:
        data = orjson.loads(path.read_bytes())
        if data.get("version") != CACHE_VERSION:
            return SavedState()
        units = {k: UnitRecord(v[0], _files_from_json(k, v[1]), v[2])
                 for k, v in data["units"].items()}
        inspected = {k: FileRecord((v[0][0], v[0][1], v[0][2]), _story_from_json(v[1]),
                                   tuple(Finding(*f) for f in v[2]), str(v[3]), v)
                     for k, v in data["inspected"].items()}
        history = data["history"]
        return SavedState(site_id=str(data["site_id"]), units=units,
                          loose=_files_from_json("/", data["loose"]),
                          check_key=str(data["check_key"]), inspected=inspected,
                          spare=_spare_from_json(data["spare"], units),
                          history=None if history is None else history_from_json(history),
                          search=_search_from_json(data["search"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return SavedState()


# A sealed search bundle's name, as desk.bundles makes them: it names a site folder.
_SEALED_NAME = re.compile(r"s-[0-9a-f]{16}")


def _search_from_json(data: Any) -> dict[str, tuple[str, ...]]:
    sealed = {}
    for name, tokens in data.items():
        if _SEALED_NAME.fullmatch(name) is None:
            raise ValueError(f"{name!r} is not a search bundle")
        sealed[name] = tuple(tokens.split())
    return sealed


def _spare_from_json(spare: Any, units: dict[str, UnitRecord]) -> Spare | None:
    if not spare["site_id"]:
        return None
    absent = set(spare["absent"])
    spare_units = {k: u for k, u in units.items() if k not in absent}
    spare_units.update((k, UnitRecord(v[0], _files_from_json(k, v[1])))
                       for k, v in spare["units"].items())
    return Spare(str(spare["site_id"]), spare_units, _files_from_json("/", spare["loose"]))


# A story's files, and a list page's: saved as their count when a unit has exactly these.
_USUAL_FILES = {3: ("index.html", "index.md", "index.json"), 2: ("index.html", "index.json")}


# A site folder: /, or /SEGMENT/.../ with no empty, "." or ".." segment, backslash or NUL.
_SITE_FOLDER = re.compile(r"/(?:(?!\.\.?/)[^/\\\x00]+/)*")


def _usual_files(unit_id: str, count: int) -> tuple[str, ...]:
    # A cheap test of what relative_file checks in full: a cache file must never name a
    # file outside the site. Most folders pass the quicker test (no segment is empty or
    # starts with a dot, no backslash or NUL); the pattern decides the others.
    if not _plain_folder(unit_id) and _SITE_FOLDER.fullmatch(unit_id) is None:
        raise ValueError(f"unit {unit_id!r} is not a site folder")
    return tuple(unit_id[1:] + name for name in _USUAL_FILES[count])


def _plain_folder(unit_id: str) -> bool:
    return (unit_id[:1] == "/" and unit_id[-1:] == "/" and "//" not in unit_id
            and "/." not in unit_id and "\\" not in unit_id and "\x00" not in unit_id)


def _files_to_json(unit_id: str, files: tuple[str, ...]) -> int | list[str]:
    count = len(files)
    if count in _USUAL_FILES and unit_id.endswith("/") and files == _usual_files(unit_id, count):
        return count
    return list(files)


def _files_from_json(unit_id: str, data: int | list[str]) -> tuple[str, ...]:
    if isinstance(data, int):
        return _usual_files(unit_id, data)
    # relative_file checks in full what the quicker test passes for most names.
    return tuple(name if _plain_folder("/" + name + "/") else relative_file("/" + name)
                 for name in data)


def _same_unit(a: Any, b: Any) -> bool:
    return bool(a.key == b.key and a.files == b.files)


def _prune(folder: Path, keep: Path) -> None:
    saved = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in saved[MAX_SAVED:]:
        if old != keep:
            old.unlink(missing_ok=True)


def _bytes_of(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _story_to_json(item: LoadedStory | None) -> Any:
    if item is None:
        return None
    return [item.path, item.digest, item.url_path, item.summary.to_list()]


# The summary fields that most stories share with others (newsroom, its title, edition,
# trust labels): read as one string each, for the summaries and their saved JSON form.
_SHARED_FIELDS = (5, 6, 7, 10, 11)


def _story_from_json(data: Any) -> LoadedStory | None:
    if data is None:
        return None
    summary = data[3]
    for i in _SHARED_FIELDS:
        if isinstance(summary[i], str):
            summary[i] = sys.intern(summary[i])
    return LoadedStory(data[0], Summary.from_list(summary), data[1], data[2])


def _finding_to_json(f: Finding) -> list[Any]:
    return [f.path, f.pointer, f.code, f.message, f.severity, f.line, f.column]
