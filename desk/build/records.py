"""What the index holds of each unit and each inspected file, and a file's stat.

Enters: what a build rendered for a unit (its key, its files, its index.json digest) and
what an inspection found in a story file (its summary, digest, findings and stat). Leaves:
the records the index (desk.build.state) keeps and reads back, which the ledger, the
writer and the inspection cache hold for every unit and file of the site.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

import orjson

from desk.content.findings import Finding
from desk.content.loader import LoadedStory
from desk.urls import USUAL_FILES, plain_folder, usual_count


class Stat(NamedTuple):
    """The stat values that change whenever a file's bytes do."""

    mtime_ns: int
    size: int
    ino: int


def file_stat(path: str) -> Stat | None:
    """A file's stat values (None: it cannot be stat'ed)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return Stat(st.st_mtime_ns, st.st_size, st.st_ino)


def git_may_vouch(saved: Stat, blob: str, story: bool, stat: Stat) -> bool:
    """Whether git's word can keep a saved inspection (of a story, when `story`, from
    the bytes of `blob`, under the stat `saved`) for a file now of stat `stat`: then it
    does when git holds the file unchanged with that blob id. The size too: git calls a
    file clean when it matches the blob after its line-ending conversion (core.autocrlf,
    eol attributes), which adds bytes to any file with a line break."""
    return story and bool(blob) and stat.size == saved.size


class UnitRecord(tuple[Any, ...]):
    """What was rendered for one unit: its key, its files and its index.json digest.

    A tuple (key, digest, count of its usual files or 0, its folder or its files): the
    files of a unit that has the usual ones in its folder (a story's three, a list
    page's two) are not spelled out but made from the folder when asked for."""

    __slots__ = ()

    key: str = property(itemgetter(0))  # type: ignore[assignment]
    json_digest: str = property(  # type: ignore[assignment]
        itemgetter(1), doc='The sha256 of the unit\'s index.json ("" when it has none).')
    usual: int = property(  # type: ignore[assignment]
        itemgetter(2), doc="The count of the unit's files when they are the usual ones "
        "in its folder (as checked when the record was made), else 0.")

    def __new__(cls, key: str, files: tuple[str, ...] | int, json_digest: str = "",
                folder: str = "") -> UnitRecord:
        if isinstance(files, int):
            return tuple.__new__(cls, (key, json_digest, files, folder))
        return tuple.__new__(cls, (key, json_digest, 0, files))

    @classmethod
    def of(cls, unit_id: str, key: str, files: tuple[str, ...] | int,
           json_digest: str = "") -> UnitRecord:
        """The record of a unit (`files`: its files, or the count of its usual ones,
        which checks that the unit is a site folder: raises ValueError if not)."""
        if isinstance(files, int):
            check_usual(unit_id, files)
            return cls(key, files, json_digest, unit_id)
        count = usual_count(unit_id, files)
        if count:
            return cls(key, count, json_digest, unit_id)
        return cls(key, files, json_digest)

    @property
    def folder(self) -> str:
        """The unit's folder, when its files are the usual ones in it (else "")."""
        return str(self[3]) if self[2] else ""

    @property
    def files(self) -> tuple[str, ...]:
        """The unit's files, relative to the site folder."""
        count = self[2]
        if count:
            return tuple(self[3][1:] + name for name in USUAL_FILES[count])
        spelled: tuple[str, ...] = self[3]
        return spelled

    def __repr__(self) -> str:
        return f"UnitRecord({self[0]!r}, {self.files!r}, {self.json_digest!r})"


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A story file's inspection, valid while its stat is unchanged (or its blob id, in
    git's view, when it has one: the blob id of the bytes inspected)."""

    stat: Stat
    story: LoadedStory | None
    findings: tuple[Finding, ...]
    blob: str = ""

    def restated(self, stat: Stat, blob: str) -> FileRecord:
        """The same inspection under a new stat and blob id (a fresh checkout's file)."""
        return FileRecord(stat, self.story, self.findings, blob)


def findings_json(findings: tuple[Finding, ...]) -> str | None:
    """The findings' JSON as a row holds it (None: none)."""
    return orjson.dumps([_finding_to_json(f) for f in findings]).decode() if findings else None


def findings_from_json(data: str | None) -> tuple[Finding, ...]:
    """The findings a row holds."""
    return () if data is None else tuple(Finding(*f) for f in orjson.loads(data))


# A site folder: /, or /SEGMENT/.../ with no empty, "." or ".." segment, backslash or NUL.
_SITE_FOLDER = re.compile(r"/(?:(?!\.\.?/)[^/\\\x00]+/)*")


def check_usual(unit_id: str, count: int) -> None:
    """Raise ValueError unless the unit is a site folder with a count of usual files."""
    # A cheap test of what relative_file checks in full: an index must never name a
    # file outside the site. Most folders pass the quicker test (no segment is empty or
    # starts with a dot, no backslash or NUL); the pattern decides the others.
    if not plain_folder(unit_id) and _SITE_FOLDER.fullmatch(unit_id) is None:
        raise ValueError(f"unit {unit_id!r} is not a site folder")
    if count not in USUAL_FILES:
        raise ValueError(f"unit {unit_id!r}: no usual {count} files")


def _finding_to_json(f: Finding) -> list[Any]:
    return [f.path, f.pointer, f.code, f.message, f.severity, f.line, f.column]
