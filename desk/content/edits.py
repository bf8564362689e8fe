"""Silent edits: a published story whose text changed since its last publish with no new
change record (a correction, a clarification, an update or an editor's note), told before
it is published again.

In: the valid stories, the URL history with its record of each story's last publish
(desk.content.history), and the stories parsed on the way. Out: a finding for each silent
edit (a warning, or an error with `silent_edits = "error"`), the text digests it read, and
the records of the publishes a build makes.

A story is read again only when its file differs from the one its record names and it was
not parsed on the way (an hour's edits, not the archive). A history written before records
existed has none: the first build after it reads each published story once to make them.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from desk.config import Config
from desk.content.digests import text_digest
from desk.content.findings import Finding
from desk.content.history import UrlHistory
from desk.content.loader import LoadedStory, ParsedStory, parse_json

SILENT_EDIT = "silent-edit"
# Digits of a file's and a text's sha256 a record keeps.
SHORT = 16
UNKNOWN = "-"


@dataclass(frozen=True)
class Record:
    """A story's last publish: its file's digest, its text's (UNKNOWN when not known) and
    how many change records it had."""

    file: str
    text: str
    changes: int

    @classmethod
    def parse(cls, line: str) -> Record:
        file, text, changes = line.split(" ")
        return cls(file, text, int(changes))

    def line(self) -> str:
        return f"{self.file} {self.text} {self.changes}"


@dataclass(frozen=True)
class Edits:
    """The silent edits found, and the text digest of each story read on the way (by path,
    with the digest of the file it was read from)."""

    findings: tuple[Finding, ...]
    texts: Mapping[str, tuple[str, str]]


def silent_edits(stories: Sequence[LoadedStory], history: UrlHistory,
                 parsed: Mapping[str, ParsedStory], config: Config) -> Edits:
    """A finding for each story whose text differs from its last publish's while it has
    no more change records than then (`parsed`: the stories parsed on the way, not read
    again)."""
    records = history.published
    findings: list[Finding] = []
    texts: dict[str, tuple[str, str]] = {}
    if not records:
        return Edits((), texts)
    # Published before, and not as it is: an hour's edits (the ids counted for those only).
    edited = [(item, line) for item in stories
              if (line := records.get(item.summary.id)) is not None
              and not line.startswith(item.digest[:SHORT])]
    ids = Counter(item.summary.id for item in stories) if edited else Counter()
    for item, line in edited:
        if ids[item.summary.id] > 1:
            continue  # an id two files claim: an error of its own
        record = Record.parse(line)
        text = _text(item, parsed)
        if text is None:
            continue  # changed since it was inspected: the next build looks again
        texts[item.path] = (item.digest, text)
        if (record.text not in (UNKNOWN, text)
                and len(item.summary.corrections) <= record.changes):
            url = history.latest(item.summary.id) or item.url_path
            findings.append(Finding(
                item.path, "/corrections", SILENT_EDIT,
                f"the text of this story changed since it was published at {url}, with no "
                "new change record: add one (a correction, clarification, update or "
                "editor's note) to say what changed", severity=config.silent_edits))
    return Edits(tuple(findings), texts)


def publish_records(history: UrlHistory, published: Iterable[LoadedStory],
                    texts: Mapping[str, tuple[str, str]],
                    parsed: Mapping[str, ParsedStory],
                    made_before: Mapping[str, str] | None = None) -> UrlHistory:
    """The history with the records of the stories this build publishes (drafts aside),
    and of no other (a withdrawn or deleted story's goes: the records are what the
    published stories are, however the build came to them, so a build from nothing
    writes the same). A record is kept when it names the story's file, else made anew,
    its text from what was read already (`texts`: the inspection's and silent_edits';
    `parsed`), else read now (a story inspected before and published only now: a
    scheduled one come due; every story once, after an upgrade from a history without
    records). UNKNOWN only when its file changed meanwhile. `made_before`: records made
    by an earlier call, by id, kept when they name the story's file as a history's are
    (desk serve's, whose history is the site's: a record is what the file is)."""
    records = history.published
    made: dict[str, str] = {}
    for item in published:
        story_id = item.summary.id
        known = records.get(story_id)
        if item.draft:
            continue
        if known is None or not known.startswith(item.digest[:SHORT]):
            known = made_before.get(story_id) if made_before is not None else None
        if known is not None and known.startswith(item.digest[:SHORT]):
            made[story_id] = known
            continue
        told = texts.get(item.path)
        text = told[1] if told is not None and told[0] == item.digest else _text(item, parsed)
        made[story_id] = Record(item.digest[:SHORT], text or UNKNOWN,
                                len(item.summary.corrections)).line()
    return history.published_as(made)


def _text(item: LoadedStory, parsed: Mapping[str, ParsedStory]) -> str | None:
    """A story's text digest, from its parse or read again (None when its file is no
    longer the one inspected)."""
    story = parsed.get(item.path)
    if story is not None and story.digest == item.digest:
        return text_digest(story.data)
    try:
        raw = Path(item.path).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(raw).hexdigest() != item.digest:
        return None
    data = parse_json(raw, item.path, [], bounded=True)  # checked when it was inspected
    return text_digest(data) if isinstance(data, dict) else None
