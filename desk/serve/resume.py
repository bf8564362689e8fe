"""Resuming a preview: whether the site the last preview of a site left is the one its
build would make now, told in a fraction of a second at any archive size.

Enters: the settings, the clock, the content folder and the record the last preview wrote
when it stopped (beside its site). Leaves: whether that site can be served at once. It
can when everything a build reads is as it was: desk's code, the settings (the preview's
base URL among them), the templates, the static files, every content file's name and
stat, the files the URL history is read from, and the clock (the same fixed time, or
the real one before any held story comes due). The record is written only from what the
last build saw (the stats it inspected the story files under), so a file saved after
that build, or while no preview ran, makes the record not match. Then the preview starts
with its build, as it always could.

A resumed preview still builds once, in the background, to have in memory what its
saves build on; until that build ends, only pages that no clock can change (HTML pages)
and assets are served at once (see DevServer.resume).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from desk.build.keys import code_fingerprint, folder_fingerprint, templates_fingerprint
from desk.build.records import Stat, file_stat
from desk.build.writer import site_id_of
from desk.config import Config
from desk.content.loader import DRAFTS, STORIES, content_files
from desk.serve.folder import RECORD

_FORMAT = "desk-preview-resume/1"


@dataclass(frozen=True)
class Record:
    """What a preview's site was built from, in digests."""

    site_id: str
    settings: str  # desk's code, the settings, the templates, the static files
    content: str  # every content file's name and stat
    history: str  # the stats of the files the URL history is read from
    clock: str  # the fixed time ("" for the real clock) and whether future stories show
    next_due: str  # when the first held story comes due ("" when none is held)

    def resumable(self, other: Record, now: datetime) -> bool:
        """Whether a site recorded as `self` is the one a build described by `other`
        would make at `now` (`other` has no site id or due time of its own)."""
        mine = (self.settings, self.content, self.history, self.clock)
        due = not self.next_due or now < datetime.fromisoformat(self.next_due)
        return mine == (other.settings, other.content, other.history, other.clock) and due


def settings_digest(config: Config) -> str:
    """desk's code, the settings, the templates and the static files."""
    return _digest([code_fingerprint(), config.model_dump_json(),
                    templates_fingerprint(config.templates_dir),
                    folder_fingerprint(config.static_dir)])


def clock_text(now: datetime | None, future: bool) -> str:
    """The clock a preview builds with: its fixed time, if any, and `future`."""
    return f"{now.isoformat() if now else ''} {'future' if future else ''}"


def history_digest(config: Config, state_file: Path) -> str:
    """The stats of the files the URL history of a preview is read from: the saved state
    of the site's own build, and its output folder's marker and URL history file."""
    from desk.urls import URL_HISTORY, relative_file  # the site's layout

    files = [state_file, config.output_dir / ".desk-site",
             config.output_dir / relative_file(URL_HISTORY)]
    return _digest([f"{f} {_stat_text(f)}" for f in files])


def story_files(config: Config) -> list[str]:
    """The story and draft files, as a build lists them."""
    content = config.content_dir
    return content_files(content, STORIES, []) + content_files(content, DRAFTS, [])


def other_files(config: Config) -> list[str]:
    """Every other file below the content folder (withdrawals, pages, images...), but
    the others below stories/ and drafts/ and hidden names, which a build does not read
    (a content folder that is a repository of its own holds one file of git's for each
    of its stories' versions)."""
    content = config.content_dir
    found: list[str] = []
    if content.is_dir():
        for entry in sorted(content.iterdir(), key=lambda p: p.name):
            if entry.name in (STORIES, DRAFTS) or entry.name.startswith("."):
                continue
            if entry.is_file():
                found.append(str(entry))
                continue
            for root, folders, names in os.walk(entry):
                folders[:] = [name for name in folders if not name.startswith(".")]
                found += (os.path.join(root, name) for name in names
                          if not name.startswith("."))
    return sorted(found)


def other_stats(paths: Iterable[str]) -> dict[str, str]:
    """Each file's stat, in words."""
    return {path: _stat_text(Path(path)) for path in paths}


def content_digest(stories: Mapping[str, Stat | None], others: Mapping[str, str]) -> str:
    """The story files' names with their stats (as inspected, or taken now), and the
    other content files' names with their stats."""
    parts = [f"{path} {stat!r}" for path, stat in sorted(stories.items())]
    parts.append("--")
    parts += [f"{path} {stat}" for path, stat in sorted(others.items())]
    return _digest(parts)


def read_record(folder: Path) -> Record | None:
    """The record the last preview left in its folder (None: none, or unreadable)."""
    try:
        data = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        if data.pop("format") != _FORMAT:
            return None
        return Record(**data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def write_record(folder: Path, record: Record) -> None:
    """Leave the record for the next preview (atomically; a failure only costs time)."""
    temporary = folder / f".{RECORD}.new"
    with contextlib.suppress(OSError):
        temporary.write_text(json.dumps({"format": _FORMAT, **asdict(record)}),
                             encoding="utf-8")
        os.replace(temporary, folder / RECORD)


def forget_record(folder: Path) -> None:
    """Remove the record: the site is about to change."""
    with contextlib.suppress(OSError):
        (folder / RECORD).unlink()


def _stat_text(path: Path) -> str:
    try:
        found = path.stat()
    except OSError:
        return "-"
    return f"{found.st_mtime_ns} {found.st_size} {found.st_ino}"


def _digest(parts: Iterable[str]) -> str:
    made = hashlib.sha256()
    for part in parts:
        made.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return made.hexdigest()


@dataclass(frozen=True)
class Seen:
    """What a build is about to read, taken before it starts (a change while it runs
    then makes the record not match)."""

    settings: str
    others: Mapping[str, str]  # every content file's stat, but the story files'
    history: str


class Recorder:
    """Keeps what the preview's last good build was made from, and leaves the record of
    it when the preview stops (`folder`: the preview's folder; `site`: its site)."""

    def __init__(self, folder: Path, site: Path, clock: str) -> None:
        self._folder = folder
        self._site = site
        self._clock = clock
        self._last: tuple[Seen, str] | None = None  # and when the first held story is due

    def before(self, config: Config, state_file: Path) -> Seen:
        """Take what a build is about to read (the story files aside: it stats them)."""
        forget_record(self._folder)  # the site is about to change
        return Seen(settings_digest(config), other_stats(other_files(config)),
                    history_digest(config, state_file))

    def built(self, seen: Seen | None, next_due: datetime | None) -> None:
        """Note the outcome of a build (`seen`: None when it failed)."""
        self._last = None if seen is None else (
            seen, next_due.isoformat() if next_due is not None else "")

    def leave(self, stories: Mapping[str, Stat | None], site_id: str | None) -> None:
        """Write the record of the last build (`stories`: the stats it inspected the
        story files under), if it succeeded and its site is the folder's."""
        if self._last is None or not site_id:
            return
        seen, due = self._last
        write_record(self._folder, Record(site_id, seen.settings,
                                          content_digest(stories, seen.others),
                                          seen.history, self._clock, due))

    def resumable(self, config: Config, state_file: Path, now: datetime) -> bool:
        """Whether the last preview's site is the one a build would make now, by its
        record; the record is used up either way."""
        record = read_record(self._folder)
        forget_record(self._folder)
        if record is None or record.site_id != site_id_of(self._site):
            return False
        stories = story_files(config)
        current = Record("", settings_digest(config),
                         content_digest({p: file_stat(p) for p in stories},
                                        other_stats(other_files(config))),
                         history_digest(config, state_file), self._clock, "")
        return record.resumable(current, now)
