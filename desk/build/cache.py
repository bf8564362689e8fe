"""The build cache: what a build remembers for the next one, so unchanged work is skipped.

Two parts, kept apart:

- **saved state** (`SavedState`, desk.build.state), written to `.desk-cache/` after every
  `desk build`:
  - inspected story files (summary, digest, git blob id and findings) by path, valid
    while the file's stat is unchanged, or when only the stat changed (a fresh checkout)
    while git holds the file unchanged with the same blob id (desk.content.gitblobs), or else
    while its digest is the same; and all only while the check key is the same. A file
    git vouches for keeps the stat it was inspected under (a fresh runner's hour rewrites
    none of their rows);
  - rendered units (a story's three files, a list page and its index.json, a feed...)
    with the key each was rendered under;
  - the spare: what the site before the current one holds, so the writer can recycle
    that folder as its next staging folder (see desk.build.writer);
  - the sealed search bundles (desk.search.bundles): each one's entries as they were indexed,
    which a build cannot learn from the site (what was sealed, and in which version);
  - the URL history (desk.content.history): every URL each story id was published at. Unlike
    the rest it is not a cache but the site's memory, which the site carries too (its
    desk-urls.json): `recall_history` says which copy a build starts from.
- **session** (`Session`), kept in memory by a long-running process (desk serve) and
  never saved: the template environment, the findings across stories, the content's
  file lists.

The saved state is tied to one output folder by the site id in its marker; state that
does not match the folder on disk is ignored, and a build without any cache is always
correct.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desk.build.records import FileRecord, Stat, file_stat, git_may_vouch
from desk.build.state import SUFFIX, SavedState, read_state, write_state
from desk.build.survey import EarlySurvey, Survey
from desk.build.writer import site_id_of, spare_path
from desk.content.checks import KeptChecks
from desk.content.findings import Finding
from desk.content.gitblobs import CleanFiles, GitListing, blob_id
from desk.content.history import UrlHistory, read_history_file
from desk.content.listing import ContentListing
from desk.content.loader import LoadedStory, content_files
from desk.urls import URL_HISTORY, relative_file

Inspected = tuple[LoadedStory | None, tuple[Finding, ...]]


@dataclass
class Session:
    """What a long-running process (desk serve) keeps between the preparations of its
    saves, so that a save reads only the files it changed; never saved."""

    environment: tuple[str, Any] | None = None  # (what it was made from, the environment)
    # The files the watcher saw change since the last preparation (None: not known, so
    # every file's stat is taken); the others are recalled without touching the disk.
    changed: set[str] | None = None
    # The checks across stories, kept up to date for the stories that changed.
    across: KeptChecks = field(default_factory=KeptChecks.kept)
    # The content's file lists, kept up to date from `changed`.
    listing: ContentListing = field(default_factory=ContentListing)
    # Held while a process forks a worker, and by the server's threads while they use
    # what a worker gets a copy of (the render context, to make a page; the error
    # stream): a worker never inherits a lock one of them held half-way.
    fork_gate: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass
class BuildCache:
    """The saved state (and where it is saved, if anywhere) plus a session, if any."""

    state: SavedState = field(default_factory=SavedState)
    file: Path | None = None
    session: Session | None = None
    # A URL history given by the caller (`desk build --url-history`, read from the last
    # deploy): used when neither the saved state nor the output folder has one.
    history: UrlHistory | None = None
    # The URL history the build starts from, whatever the saved state and the output
    # folder hold (desk serve's start: its folder may hold the site of an older preview,
    # or of another site, not the history the site's own build starts from).
    start_history: UrlHistory | None = None
    # The content's files looked at while the state was read (desk.build.survey), for
    # the inspection to take; its owner closes it.
    survey: EarlySurvey | None = None
    # How long reading the saved state took (None: not read; the build reports it).
    read_seconds: float | None = None

    @classmethod
    def saved_for(cls, cache_dir: Path, out_dir: Path, records: bool = True) -> BuildCache:
        """The state saved for an output folder (empty when none or unreadable; without
        its inspections and units unless `records`: see read_state)."""
        file = cls.file_for(cache_dir, out_dir)
        started = time.perf_counter()
        state = read_state(file, spare=records and spare_path(out_dir).is_dir(),
                           records=records)
        return cls(state, file, read_seconds=time.perf_counter() - started)

    @staticmethod
    def file_for(cache_dir: Path, out_dir: Path) -> Path:
        """Where the state of an output folder is saved in a cache folder."""
        # Named by where the output is seen from the cache, not by where both are: a
        # checkout that is moved or renamed keeps its cache.
        seen = os.path.relpath(out_dir.resolve(), cache_dir.resolve())
        where = hashlib.sha256(seen.encode()).hexdigest()[:12]
        return cache_dir / f"{out_dir.name}-{where}{SUFFIX}"

    def save(self) -> None:
        """Write the state for the next process (atomically); a failure only costs time."""
        if self.file is None:
            return
        with contextlib.suppress(OSError):
            write_state(self.state, self.file)

    def recall_history(self, out_dir: Path) -> tuple[UrlHistory, list[Finding]]:
        """The URL history a build into `out_dir` starts from: the one to start from,
        if set; else the saved state's, when it describes the site there (or there is
        none); else that site's desk-urls.json; else the given one; else none. Findings
        when a history file is unreadable."""
        if self.start_history is not None:
            return self.start_history, []
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


class InspectionCache:
    """The saved inspections of story files, as the loader asks for them (`content`: the
    content folder, when git may be asked which of its files are unchanged)."""

    def __init__(self, state: SavedState, check_key: str,
                 changed: set[str] | None = None, content: Path | None = None,
                 survey: Survey | None = None) -> None:
        self._state = state
        self._changed = changed if changed is not None else _surveyed_changes(state, survey)
        self._content = content
        self._survey = survey  # `content`'s files looked at ahead, if they were
        self._clean: CleanFiles | None = None
        # The last versions of the stories whose saved inspection this one replaces or
        # drops (None: not known, the saved inspections being of no use).
        self.replaced: list[LoadedStory] | None = None if state.inspected_ahead else []
        state.inspected_ahead = True
        if state.check_key != check_key:
            state.inspected.clear()
            state.check_key = check_key
            self._changed = None
            self.replaced = None

    def unchanged(self, path: str) -> Inspected | None:
        """The inspection of a file known unchanged without a look at it (the caller
        knows which files changed), if any."""
        if self._changed is None or path in self._changed:
            return None
        known = self._state.inspected.get(path)
        return (known.story, known.findings) if known is not None else None

    def files(self, content: Path, folder: str, findings: list[Finding]) -> list[str]:
        """The files of a content folder (content_files), as surveyed if they were."""
        found = self._survey.files.get(folder) if self._survey is not None else None
        if found is None:
            return content_files(content, folder, findings)
        findings.extend(found[1])
        return found[0]

    def stat(self, path: str) -> Stat | None:
        """A file's stat (file_stat), as surveyed if it was."""
        stats = self._survey.stats if self._survey is not None else None
        if stats is not None and path in stats:
            return stats[path]
        return file_stat(path)

    def recall(self, path: str, stat: Stat | None) -> Inspected | None:
        """The inspection of an unchanged file, if known."""
        known = self._state.inspected.get(path)
        if known is None or stat is None:
            return None
        stated = known.stat, known.blob
        if stated[0] != stat:
            # Touched but maybe not changed (a fresh checkout): git, else the bytes decide.
            if self._git_holds(path, stat, known, stated):
                return known.story, known.findings
            same = self._same_bytes(path, known)
            if same is None:
                return None
            self._state.inspected[path] = known.restated(stat, same)
        return known.story, known.findings

    def remember(self, path: str, stat: Stat | None, result: Inspected) -> None:
        """Remember a file's inspection under the stat taken before it was read, with the
        blob id of the bytes inspected."""
        if stat is not None:
            story = result[0]
            self._replace(path)
            self._state.inspected[path] = FileRecord(stat, *result,
                                                     story.blob if story is not None else "")

    def forget_others(self, listed: Collection[str]) -> None:
        """Drop the inspections of files no longer listed (deleted or moved away), so the
        saved state grows with the content, not with its history."""
        inspected = self._state.inspected
        for path in [p for p in inspected if p not in listed]:
            self._replace(path)
            del inspected[path]

    def _replace(self, path: str) -> None:
        """Note the story a file's saved inspection held, as that inspection goes."""
        known = self._state.inspected.get(path)
        if known is not None and known.story is not None and self.replaced is not None:
            self.replaced.append(known.story)

    def _git_holds(self, path: str, stat: Stat, known: FileRecord,
                   stated: tuple[Stat, str]) -> bool:
        """Whether git vouches for a touched file's saved inspection (git_may_vouch, and
        git holds it unchanged with the blob inspected). Such a record is not restated:
        the next fresh checkout asks git again, and a build on this checkout asks git
        rather than reading the file."""
        saved, blob = stated  # the stat and blob id the inspection was made under
        if not git_may_vouch(saved, blob, known.story is not None, stat):
            return False
        clean = self._survey.clean if self._survey is not None else None
        if clean is not None:  # git's word, taken with the survey
            return clean.get(path) == blob
        return self._git_clean().holds(path, blob)

    @staticmethod
    def _same_bytes(path: str, known: FileRecord) -> str | None:
        """The blob id of a touched file's bytes when they are the ones `known` was
        inspected from, by their digest (None: they are not, or cannot be read)."""
        if known.story is None:
            return None
        data = _bytes_of(path)
        if data is None or hashlib.sha256(data).hexdigest() != known.story.digest:
            return None
        return blob_id(data)

    def _git_clean(self) -> CleanFiles:
        """The content files git holds unchanged, with their blob ids (asked once)."""
        if self._clean is None:
            if self._content is not None:
                with GitListing(self._content) as listing:
                    self._clean = CleanFiles.of_listing(listing)
            else:
                self._clean = CleanFiles(())
        return self._clean


def _surveyed_changes(state: SavedState, survey: Survey | None) -> frozenset[str] | None:
    """The files a survey could not vouch for, when it was compared with this very state
    (its file, read by this build), else None: every file is looked at."""
    if survey is None or survey.changed is None or state.stored is None:
        return None
    return survey.changed if survey.index == state.stored.file else None


def _bytes_of(path: str) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None
