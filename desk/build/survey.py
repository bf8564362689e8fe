"""The content's story and draft files looked at ahead: each file's path and stat, and
git's blob id of each file git holds unchanged, taken while the saved state is read.

Enters: the content folder (whether git is to be asked: a fresh checkout; the saved
state's file). Leaves: a Survey, which the inspection (desk.build.cache.InspectionCache)
takes instead of walking the folders, taking each file's stat and hashing git's listing
itself.

At 100,000 stories the survey and the read of the saved state take more than half a
second each: `desk build`, and desk serve for its first preparation (after it, its
watcher names the files that changed), start the survey in a forked process before
they read the state, so both go on at once on two cores. Where forking is not safe, git's
listing is started early all the same and the rest is done when the inspection asks.

Given the saved state's file, the forked survey also compares each file's stat (and git's
word) with the inspection saved for it, on its own core, from the stats the state's
index holds (desk.build.state.unvouched, one query): the build then looks only at the files it
names, and recalls the others' inspections without a look (as desk serve does for the
files its watcher did not see change).

A survey is as of the build's start: a file saved while the state is read is inspected
under the older stat, so the next build reads it again, as for any file saved while a
build runs; a file added meanwhile waits for the next build.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from desk.build.parallel import Forked, fork_safe, result_of, start_forked, stop_forked
from desk.build.records import Stat, file_stat
from desk.build.state import unvouched
from desk.content.findings import Finding
from desk.content.gitblobs import GitListing, checked_out_since
from desk.content.loader import DRAFTS, STORIES, content_files

# The content folders surveyed: the ones with a file per story.
SURVEYED = (STORIES, DRAFTS)


@dataclass(frozen=True)
class Survey:
    """What the inspection would find by looking itself, looked at ahead."""

    # By content folder: its files, sorted, and the findings of the walk (content_files).
    files: Mapping[str, tuple[list[str], list[Finding]]]
    stats: Mapping[str, Stat | None]  # by file, as listed (see `changed`)
    # git's blob id of each file it holds unchanged (clean_blobs); None: git not asked.
    clean: Mapping[str, str] | None = None
    # When the survey was compared with the saved state: the files whose saved inspection
    # it could not vouch for (desk.build.state.unvouched), and that index's file (the
    # build lock keeps it as it was until the build that reads it writes it).
    # `stats` and `clean` then hold those files only: the others need no look.
    changed: frozenset[str] | None = None
    index: Path | None = None


def survey(content: Path, listing: GitListing | None, state: Path | None = None) -> Survey:
    """The story and draft files below `content` with their stats, and git's clean files
    from `listing` (started by the caller, which closes it), if any; compared with the
    state saved in `state`, if given and readable."""
    files: dict[str, tuple[list[str], list[Finding]]] = {}
    stats: dict[str, Stat | None] = {}
    for folder in SURVEYED:
        findings: list[Finding] = []
        paths = content_files(content, folder, findings)
        files[folder] = (paths, findings)
        for path in paths:
            stats[path] = file_stat(path)
    # git's clean files named by the surveyed paths' own strings: at 100,000 stories a
    # second string for each was 12 MB of the survey's process, alive while the build
    # reads the saved state (their peaks met).
    clean = None if listing is None else listing.clean({path: path for path in stats})
    compared = unvouched(state, stats, clean) if state is not None else None
    if compared is None:
        return Survey(files, stats, clean)
    changed = compared
    # What the build looks at, and no more: its result is read back by the build.
    return Survey(files, {path: stats[path] for path in changed},
                  None if clean is None else {p: clean[p] for p in changed if p in clean},
                  changed, state)


def _survey_asking_git(content: Path, ask_git: bool, state: Path | None) -> Survey:
    with GitListing(content) if ask_git else contextlib.nullcontext() as listing:
        return survey(content, listing, state)


class EarlySurvey:
    """A survey of the content started now and taken when the inspection asks for it: in
    a forked process where forking is safe (and `fork`: the build may use a second
    process); else git's listing (`ask_git`) started now, the rest done when asked. A
    context manager: leaving it stops what still runs."""

    def __init__(self, content: Path, ask_git: bool, fork: bool = True,
                 state: Path | None = None) -> None:
        self._content = content
        self._worker: Forked | None = None
        self._listing: GitListing | None = None
        if fork and fork_safe():
            self._worker = start_forked(lambda: _survey_asking_git(content, ask_git, state))
        elif ask_git:
            self._listing = GitListing(content)

    def __enter__(self) -> EarlySurvey:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def result(self) -> Survey | None:
        """The survey (None: the process that took it failed, and the inspection looks
        for itself). Taken once; asked again (a build that starts over), it is made
        here, without git."""
        worker, self._worker = self._worker, None
        if worker is not None:
            done, found = result_of(worker)
            return found if done else None
        try:
            return survey(self._content, self._listing)
        finally:
            self.close()

    def close(self) -> None:
        """Stop the forked process or git's listing, if they still run."""
        if self._worker is not None:
            stop_forked(self._worker)
            self._worker = None
        if self._listing is not None:
            self._listing.close()
            self._listing = None


@contextlib.contextmanager
def early_survey(content: Path, state_file: Path | None, jobs: int
                 ) -> Iterator[EarlySurvey | None]:
    """The content's files looked at on one core while the index in `state_file` is read
    on the other, when `jobs` allows a second process (none without an index to compare
    them with); git asked which are unchanged when the checkout is newer than the index
    (a fresh runner's clone). Both `desk build` and desk serve's first preparation."""
    if state_file is None or not state_file.is_file() or not content.is_dir():
        yield None
        return
    with EarlySurvey(content, checked_out_since(content, state_file), jobs > 1,
                     state_file) as survey:
        yield survey
