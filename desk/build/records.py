"""What the saved state holds of each unit and each inspected file, and a file's stat.

Enters: what a build rendered for a unit (its key, its files, its index.json digest) and
what an inspection found in a story file (its summary, digest, findings and stat). Leaves:
the records the saved state (desk.build.state) keeps and reads back, which the ledger,
the writer and the inspection cache hold for every unit and file of the site. A value the
state leaves in its file until asked for (a unit's digest, an inspection's stat) is read
through that file (desk.build.state.StateFile).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import orjson

from desk.content.findings import Finding
from desk.content.loader import ContentChanged, LoadedStory
from desk.urls import USUAL_FILES, plain_folder, usual_count

if TYPE_CHECKING:
    from desk.build.state import StateFile

# A file's stat values that change whenever its bytes do (mtime in ns, size, inode),
# packed in one int: a tuple of three ints is three times its size, and the state holds
# one for every story file.
Stat = int
_FIELD = (1 << 64) - 1


def packed_stat(mtime_ns: int, size: int, ino: int) -> Stat:
    """The three values in one (a negative mtime included; size and inode fit in 64 bits)."""
    return (mtime_ns << 128) | ((size & _FIELD) << 64) | (ino & _FIELD)


def stat_values(stat: Stat) -> tuple[int, int, int]:
    """mtime in ns, size and inode, as packed."""
    return stat >> 128, stat_size(stat), stat & _FIELD


def stat_size(stat: Stat) -> int:
    """The size, as packed."""
    return (stat >> 64) & _FIELD


def file_stat(path: str) -> Stat | None:
    """The stat values that change whenever a file's bytes do."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return packed_stat(st.st_mtime_ns, st.st_size, st.st_ino)

def git_may_vouch(saved: Stat, blob: str, story: bool, stat: Stat) -> bool:
    """Whether git's word can keep a saved inspection (of a story, when `story`, from
    the bytes of `blob`, under the stat `saved`) for a file now of stat `stat`: then it
    does when git holds the file unchanged with that blob id. The size too: git calls a
    file clean when it matches the blob after its line-ending conversion (core.autocrlf,
    eol attributes), which adds bytes to any file with a line break."""
    return story and bool(blob) and stat_size(stat) == stat_size(saved)


class UnitRecord(tuple[Any, ...]):
    """What was rendered for one unit: its key, its files and its index.json digest.

    Held for every unit of the site, so kept small: the files of a unit that has the
    usual ones in its folder (a story's three, a list page's two) are not spelled out
    but made from the folder when asked for (`UnitRecord.of`), and the digest of such a
    unit read back with the state is left in the state's file until asked for.

    A tuple (key, digest or the state's file, the count of its usual files or 0, its
    folder or its files): immutable, made in C for each of 155,000 units the state's
    reader reads from its unit log at 100,000 stories (desk.build.state), with no call
    of a Python function for each, and its count read in C by the writer's passes over
    them all."""

    __slots__ = ()

    key: str = property(itemgetter(0))  # type: ignore[assignment]
    held_digest: str | StateFile = property(  # type: ignore[assignment]
        itemgetter(1), doc="The index.json digest as held: the digest, or the state's "
        "file it was left in.")
    usual: int = property(  # type: ignore[assignment]
        itemgetter(2), doc="The count of the unit's files when they are the usual ones "
        "in its folder (as checked when the record was made), else 0.")

    def __new__(cls, key: str, files: tuple[str, ...] | int,
                json_digest: str | StateFile = "", folder: str = "") -> UnitRecord:
        # A digest left in the state's file only with the unit's folder, which names it.
        if isinstance(files, int):
            return tuple.__new__(cls, (key, json_digest, files, folder))
        return tuple.__new__(cls, (key, json_digest, 0, files))

    @classmethod
    def of(cls, unit_id: str, key: str, files: tuple[str, ...] | int,
           json_digest: str | StateFile = "") -> UnitRecord:
        """The record of a unit (`files`: its files, or the count of its usual ones,
        which checks that the unit is a site folder: raises ValueError if not;
        `json_digest`: the digest, or the state's file that holds it, for a unit of
        usual files)."""
        if isinstance(files, int):
            check_usual(unit_id, files)  # made into names only when asked for
            return cls(key, files, json_digest, unit_id)
        count = usual_count(unit_id, files)
        if count:
            return cls(key, count, json_digest, unit_id)
        if not isinstance(json_digest, str):  # rare: read now, as there is no folder
            json_digest = json_digest.json_digest(unit_id, key)
        return cls(key, files, json_digest)

    @property
    def json_digest(self) -> str:
        """The sha256 of the unit's index.json ("" when it has none)."""
        digest = self[1]
        return digest if isinstance(digest, str) else digest.json_digest(self[3], self[0])

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

    # Equal when the unit is the same, wherever its digest is held (a tuple's own
    # comparison would tell the held values apart); != said too, or the tuple's is used.
    def __eq__(self, other: object) -> bool:
        return (isinstance(other, UnitRecord) and self[0] == other[0]
                and self.json_digest == other.json_digest and self.files == other.files)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self[0])

    def __repr__(self) -> str:
        return f"UnitRecord({self[0]!r}, {self.files!r}, {self.json_digest!r})"


# Where an inspection stands against the state's file, so that only what changed is
# written: as read from it, only its stat changed since (a fresh checkout's file), or new.
STORED, RESTATED, NEW = 0, 1, 2


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A story file's inspection, valid while its stat is unchanged (or its blob id, in
    git's view, when it has one: the blob id of the bytes inspected).

    The stat and blob id of an inspection read with the state are left in the state's
    file (`held_stat` is that file; `held_blob` is then ""), to be read when asked for
    (`stated`): an hourly build that a survey told what changed asks for none, and at
    100,000 stories they were 14 MB held for nothing."""

    held_stat: Stat | StateFile
    story: LoadedStory | None
    findings: tuple[Finding, ...]
    held_blob: str = ""
    # Any record made is new (a copy made with dataclasses.replace too, so it is written
    # whole); only the state's reader and `restated` say otherwise.
    origin: int = field(default=NEW, compare=False, init=False)

    def stated(self, path: str) -> tuple[Stat, str]:
        """The stat and blob id this inspection (of the file `path`) holds good for
        (raises ContentChanged when they were left in a state's file whose row for the
        file no longer holds this inspection: another build has rewritten it since)."""
        held = self.held_stat
        if isinstance(held, Stat):
            return held, self.held_blob
        return held.file_stat(path, inspection_of(self))

    def stated_if_known(self, path: str) -> tuple[Stat, str] | None:
        """`stated`, or None when no longer known: the file is to be looked at again."""
        try:
            return self.stated(path)
        except ContentChanged:
            return None

    def hold_stat(self, stat: Stat, blob: str) -> None:
        """Hold the stat and blob id this record left in the state's file, once read
        from it (as `placed` sets the origin: what the record says does not change)."""
        object.__setattr__(self, "held_stat", stat)
        object.__setattr__(self, "held_blob", blob)

    def restated(self, stat: Stat, blob: str) -> FileRecord:
        """The same inspection under a new stat and blob id (a fresh checkout's file)."""
        return FileRecord(stat, self.story, self.findings, blob).placed(
            NEW if self.origin == NEW else RESTATED)

    def placed(self, origin: int) -> FileRecord:
        """This record, said to stand so against the state's file (see `origin`)."""
        object.__setattr__(self, "origin", origin)
        return self


def inspection_of(record: FileRecord) -> str | bytes | None:
    """What tells an inspection (StateFile.file_stat): its story's digest, else the JSON
    of its findings."""
    story = record.story
    return story.digest if story is not None else findings_json(record.findings)


def findings_json(findings: tuple[Finding, ...]) -> bytes | None:
    """The findings' JSON as a row holds it (None: none)."""
    return orjson.dumps([_finding_to_json(f) for f in findings]) if findings else None


# A site folder: /, or /SEGMENT/.../ with no empty, "." or ".." segment, backslash or NUL.
_SITE_FOLDER = re.compile(r"/(?:(?!\.\.?/)[^/\\\x00]+/)*")


def check_usual(unit_id: str, count: int) -> None:
    """Raise ValueError unless the unit is a site folder with a count of usual files."""
    # A cheap test of what relative_file checks in full: a cache file must never name a
    # file outside the site. Most folders pass the quicker test (no segment is empty or
    # starts with a dot, no backslash or NUL); the pattern decides the others.
    if not plain_folder(unit_id) and _SITE_FOLDER.fullmatch(unit_id) is None:
        raise ValueError(f"unit {unit_id!r} is not a site folder")
    if count not in USUAL_FILES:
        raise ValueError(f"unit {unit_id!r}: no usual {count} files")


def _finding_to_json(f: Finding) -> list[Any]:
    return [f.path, f.pointer, f.code, f.message, f.severity, f.line, f.column]
