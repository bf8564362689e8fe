"""What a build remembers for the next one, so unchanged work is not done twice.

Three memories, each only ever used to skip work whose result is known to be identical:

- inspected story files (summary, sha256 and findings), keyed by the file's path and stat
  signature, or by its sha256 when only the stat changed (a fresh checkout);
- rendered units (a story's three files, a list page and its index.json, a feed), keyed
  by a hash of everything the unit depends on. A unit whose key is unchanged is not
  rendered again: its files are kept, or hard-linked from the previous site;
- the spare: what the site before the current one holds, so the writer can recycle that
  folder as its next staging folder (see desk.writer).

All three are saved beside the output folder (in `.desk-cache/`), so the hourly
`desk build` benefits, and kept in memory by desk serve. The memory is tied to one output
folder by the id in its marker; a memory that does not match the folder on disk is
ignored, and a build without any memory is always correct.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from desk.findings import Finding
from desk.loader import LoadedStory, Summary
from desk.render import Output
from desk.urls import relative_file

CACHE_VERSION = 3


@dataclass(frozen=True)
class Unit:
    """What was rendered for one unit last time."""

    key: str
    files: tuple[str, ...]
    json_digest: str = ""


@dataclass(frozen=True)
class ParsedFile:
    """A story file's load result, valid while its stat signature is unchanged."""

    signature: tuple[int, int, int]
    story: LoadedStory | None
    findings: tuple[Finding, ...]
    saved: Any = None  # its JSON form when read from the cache (saved again as is)

    def to_json(self) -> Any:
        """The JSON form of this entry."""
        if self.saved is not None:
            return self.saved
        return [list(self.signature), _story_to_json(self.story),
                [_finding_to_json(f) for f in self.findings]]


@dataclass
class BuildCache:
    """Mutable memory between builds; a build reads the old units and writes new ones."""

    site_id: str = ""
    search_key: str = ""
    units: dict[str, Unit] = field(default_factory=dict)
    parsed: dict[str, ParsedFile] = field(default_factory=dict)
    # The site before the current one, kept as a spare folder to recycle (see desk.writer).
    spare_id: str = ""
    spare_units: dict[str, Unit] = field(default_factory=dict)
    spare_loose: tuple[str, ...] = ()
    loose: tuple[str, ...] = ()  # files of the current site outside any unit
    # In-process only: feed entries by story key, and the template environment (Jinja
    # reloads a template whose file changed) by what it was made from.
    feed_entries: dict[str, Any] = field(default_factory=dict)
    environment: tuple[str, Any] | None = None
    present: set[str] = field(default_factory=set)  # files of the live preview's folder
    parsed_settings: str = ""  # what the remembered findings were checked against
    key_memo: dict[tuple[str, ...], str] = field(default_factory=dict)  # in-process only

    def file_signature(self, path: str | Path) -> tuple[int, int, int] | None:
        """The stat values that change whenever a file's bytes do."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def save(self, path: Path) -> None:
        """Write the unit memory (atomically) for the next process."""
        data = {
            "version": CACHE_VERSION,
            "site_id": self.site_id,
            "search_key": self.search_key,
            "units": {k: [u.key, _files_to_json(k, u.files), u.json_digest]
                      for k, u in self.units.items()},
            "parsed_settings": self.parsed_settings,
            "parsed": {k: p.to_json() for k, p in self.parsed.items()},
            "loose": list(self.loose),
            # The spare's units, as far as they differ from the current ones (most do not).
            "spare": {"site_id": self.spare_id, "loose": list(self.spare_loose),
                      "units": {k: [u.key, _files_to_json(k, u.files)]
                                for k, u in self.spare_units.items()
                                if k not in self.units or not _same_unit(self.units[k], u)},
                      "absent": [k for k in self.units if k not in self.spare_units]},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(orjson.dumps(data))
        os.replace(temporary, path)
        _prune(path.parent, keep=path)

    @classmethod
    def read(cls, path: Path) -> BuildCache:
        """The saved unit memory, or an empty cache if there is none or it is unreadable."""
        try:
            data = orjson.loads(path.read_bytes())
            if data.get("version") != CACHE_VERSION:
                return cls()
            units = {k: Unit(v[0], _files_from_json(k, v[1]), v[2])
                     for k, v in data["units"].items()}
            parsed = {k: ParsedFile((v[0][0], v[0][1], v[0][2]), _story_from_json(v[1]),
                                    tuple(Finding(*f) for f in v[2]), v)
                      for k, v in data["parsed"].items()}
            spare = data["spare"]
            absent = set(spare["absent"])
            spare_units = {k: u for k, u in units.items() if k not in absent}
            spare_units.update((k, Unit(v[0], _files_from_json(k, v[1])))
                               for k, v in spare["units"].items())
            return cls(site_id=str(data["site_id"]), search_key=str(data["search_key"]),
                       units=units, parsed=parsed, parsed_settings=str(data["parsed_settings"]),
                       spare_id=str(spare["site_id"]), spare_units=spare_units,
                       spare_loose=_files_from_json("/", spare["loose"]),
                       loose=_files_from_json("/", data["loose"]))
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return cls()


# A story's files, and a list page's: saved as their count when a unit has exactly these.
_USUAL_FILES = {3: ("index.html", "index.md", "index.json"), 2: ("index.html", "index.json")}


def _usual_files(unit_id: str, count: int) -> tuple[str, ...]:
    # A cheap test of what relative_file checks in full: a memory file must never name a
    # file outside the site.
    if not unit_id.startswith("/") or not unit_id.endswith("/") or any(
            part in (".", "..") for part in unit_id.split("/")) or "\\" in unit_id or (
            "\x00" in unit_id):
        raise ValueError(f"unit {unit_id!r} is not a site folder")
    return tuple(unit_id[1:] + name for name in _USUAL_FILES[count])


def _files_to_json(unit_id: str, files: tuple[str, ...]) -> int | list[str]:
    count = len(files)
    if count in _USUAL_FILES and unit_id.endswith("/") and files == _usual_files(unit_id, count):
        return count
    return list(files)


def _files_from_json(unit_id: str, data: int | list[str]) -> tuple[str, ...]:
    if isinstance(data, int):
        return _usual_files(unit_id, data)
    return tuple(relative_file("/" + name) for name in data)


def _same_unit(a: Unit, b: Unit) -> bool:
    return a.key == b.key and a.files == b.files


# Memories of output folders kept at most (the oldest go first).
MAX_SAVED = 20


def _prune(folder: Path, keep: Path) -> None:
    saved = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in saved[MAX_SAVED:]:
        if old != keep:
            old.unlink(missing_ok=True)


def digest(*parts: bytes | str) -> str:
    """A short hash of several values (length-prefixed, so no two inputs collide)."""
    chunks: list[bytes] = []
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        chunks += (len(data).to_bytes(8, "big"), data)
    return hashlib.sha256(b"".join(chunks)).hexdigest()[:32]


# Keys remembered at most by a long-running process, before it starts afresh.
MAX_MEMO = 200_000


def memo_digest(memo: dict[tuple[str, ...], str] | None, *parts: str) -> str:
    """digest(*parts), remembered in `memo` (desk serve's) across builds: most keys of a
    large site are the same from one save to the next."""
    if memo is None:
        return digest(*parts)
    found = memo.get(parts)
    if found is None:
        if len(memo) > MAX_MEMO:
            memo.clear()
        found = memo[parts] = digest(*parts)
    return found


def folder_fingerprint(folder: Path) -> str:
    """A hash of every file's name and bytes below a folder (templates, static)."""
    parts: list[bytes | str] = []
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                parts += [path.relative_to(folder).as_posix(), path.read_bytes()]
    return digest(*parts)


class Linker(Protocol):
    """What the ledger needs of the writer."""

    def link_previous(self, files: tuple[str, ...], unit: str = "", key: str = "") -> bool: ...


class Ledger:
    """Per unit: link last build's files when the key is unchanged, else render and record."""

    def __init__(self, previous: dict[str, Unit], linker: Linker) -> None:
        self._previous = previous
        self._linker = linker
        self.units: dict[str, Unit] = {}
        self.reused = 0

    def reuse(self, unit_id: str, key: str) -> Unit | None:
        """The previous unit if its key matches and its files could be linked."""
        old = self._previous.get(unit_id)
        if old is None or old.key != key or not self._linker.link_previous(old.files, unit_id, key):
            return None
        self.units[unit_id] = old
        self.reused += 1
        return old

    def record(self, unit_id: str, key: str, outputs: list[Output], json_digest: str = "") -> None:
        """Remember what was rendered for a unit."""
        self.record_files(unit_id, key, tuple(relative_file(o.path) for o in outputs),
                          json_digest)

    def record_files(self, unit_id: str, key: str, files: tuple[str, ...],
                     json_digest: str = "") -> None:
        """Remember the files rendered for a unit."""
        self.units[unit_id] = Unit(key, files, json_digest)

    def search_key(self) -> str:
        """What the search index depends on: every story page's key."""
        return digest(*(f"{k}={u.key}" for k, u in sorted(self.units.items())
                        if k.startswith("/stories/")))

    def site_id(self) -> str:
        """A deterministic id of what was built (same input, same id)."""
        return digest(*(f"{k}={u.key}" for k, u in sorted(self.units.items())))


class ParseCache:
    """The loader's memory of inspected files, valid while a file's stat signature and the
    settings its checks depend on are unchanged."""

    def __init__(self, cache: BuildCache, settings: str) -> None:
        self._cache = cache
        if cache.parsed_settings != settings:
            cache.parsed.clear()
            cache.parsed_settings = settings

    def signature(self, path: str) -> tuple[int, int, int] | None:
        """The file's stat signature, taken before it is read."""
        return self._cache.file_signature(path)

    def recall(self, path: str, signature: Any) -> tuple[LoadedStory | None,
                                                          tuple[Finding, ...]] | None:
        """The remembered result for an unchanged file."""
        known = self._cache.parsed.get(path)
        if known is None or signature is None:
            return None
        if known.signature != signature:
            # Touched but maybe not changed (a fresh checkout): the bytes decide.
            if known.story is None or _sha256_of(path) != known.story.digest:
                return None
            self.remember(path, signature, (known.story, known.findings))
        return known.story, known.findings

    def remember(self, path: str, signature: Any,
                 result: tuple[LoadedStory | None, tuple[Finding, ...]]) -> None:
        """Remember a file's result under the signature taken before it was read."""
        if signature is not None:
            self._cache.parsed[path] = ParsedFile(signature, *result)


def _sha256_of(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _story_to_json(item: LoadedStory | None) -> Any:
    if item is None:
        return None
    return [item.path, item.digest, item.url_path, item.summary.to_list()]


def _story_from_json(data: Any) -> LoadedStory | None:
    if data is None:
        return None
    return LoadedStory(data[0], Summary.from_list(data[3]), data[1], data[2])


def _finding_to_json(f: Finding) -> list[Any]:
    return [f.path, f.pointer, f.code, f.message, f.severity, f.line, f.column]
