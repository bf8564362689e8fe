"""URL history: every URL each story id was published at, and the redirects it implies.

A story's URL is its date and slug, so correcting either moves the story. desk remembers
the URLs by story id: the old ones get a redirect page to the newest, and a withdrawn
story's notice goes where readers last saw it. A URL belongs to the last story published
at it (a redirect never overwrites a live page).

Beside each id's URLs, the history keeps a record of its story's last publish (`published`:
the digest of its file and of its text, and how many change records it had then), so that
an edit of a published story's text with no change record is told before it is published
again (desk.content.edits). It travels with the URLs, fresh runners included; a history
written before it (version 1) has no records, and reads as one.

One JSON form, kept in two places:

- the build cache's saved state (desk.build.cache), for the next build on the same machine;
- the site itself, at `/.well-known/desk-urls.json` (with the redirects, for deploys to
  object storage), so a build without the cache reads it back from the site it replaces
  or, on a fresh runner, from a copy of the previous deploy's (`--url-history FILE`).
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import orjson

from desk import urls
from desk.config import Config
from desk.content.findings import Finding, escape_pointer

# 2: the record of each story's last publish (`published`); a version 1 file still loads.
HISTORY_VERSION = 2
HISTORY_VERSIONS = (1, 2)
HISTORY_CODE = "url-history"
T = TypeVar("T")
# A last publish's record: the first 16 hex digits of the sha256 of the story's file (of
# its index.json for a held-back story's stand-in) and of its text (desk.content.digests.
# text_digest; "-" when not known), and its count of change records.
_RECORDS = re.compile(r"(?:[0-9a-f]{16} (?:[0-9a-f]{16}|-) (?:0|[1-9][0-9]{0,5})\n)*")


@dataclass(frozen=True)
class Redirect:
    """An old URL path of a story and the path it now redirects to."""

    path: str
    target: str
    id: str


@dataclass(frozen=True)
class UrlHistory:
    """The URL paths of each story id, oldest first (the last is its newest); a path is
    under one id at most."""

    urls: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The record of each story's last publish, by id (see _RECORDS).
    published: Mapping[str, str] = field(default_factory=dict)

    def latest(self, story_id: str) -> str | None:
        """The newest URL path a story was published at, if any."""
        found = self.urls.get(story_id)
        return found[-1] if found else None

    def advance(self, pages: Iterable[tuple[str, str]]) -> UrlHistory:
        """The history after a build whose live pages are `pages` (story id, URL path;
        no id or path twice): each path becomes its id's newest and leaves the list of
        any other id."""
        latest = self.latest
        # Only the pages that moved: the others are their ids' newest already, and no
        # other page takes their path or id. An hour moves a few of 100,000.
        moved = sorted((story_id, path) for story_id, path in pages
                       if latest(story_id) != path)
        if not moved:
            return self  # nothing moved (the usual build)
        published = self.published
        if not self.urls:
            # Every page is its id's first (a preview with no site history, as an
            # editor's usually is: on every save at 100,000 stories): by id already.
            return UrlHistory({story_id: (path,) for story_id, path in moved}, published)
        lists = dict(self.urls)  # tuples, replaced where they change
        wanted = {path for _, path in moved}
        owners = {path: k for k, paths in lists.items() for path in paths if path in wanted}
        for story_id, path in moved:
            former = owners.get(path)
            if former is not None:
                lists[former] = tuple(p for p in lists[former] if p != path)
            lists[story_id] = (*lists.get(story_id, ()), path)
            owners[path] = story_id
        kept = {k: v for k, v in lists.items() if v}
        return UrlHistory(kept if _in_order(kept) else dict(sorted(kept.items())), published)

    def published_as(self, records: dict[str, str]) -> UrlHistory:
        """The history with these records of last publishes, in the order given (the
        catalog's, or the index's: the site's copy lists them by id, see
        published_json); itself when they are the ones it has, so that the saved state
        keeps the history it holds."""
        return self if records == self.published else UrlHistory(self.urls, records)

    def to_json(self) -> Mapping[str, tuple[str, ...]]:
        """The JSON form of the history (ids in order; a tuple is a JSON array): not to
        be changed, as it may be the history's own mapping."""
        return _by_id(self.urls)

    def published_json(self) -> Mapping[str, str]:
        """The records of last publishes as the site's copy lists them: by id, in order,
        whatever order a build made them in (the same bytes from nothing or from the
        index). Not to be changed, as it may be the history's own mapping."""
        return _by_id(self.published)


def redirects(history: UrlHistory, current: Mapping[str, str], live: Container[str]
              ) -> list[Redirect]:
    """Every old path of a story that has a page now (`current`: its path by id) and that
    no live page (`live`: the paths) claims, pointing at the story's page; by path.
    `history` is the one after the build of those pages (UrlHistory.advance), so a story
    with one path has none but its page's: only those with more are looked at."""
    found = [Redirect(path, target, story_id)
             for story_id, paths in history.urls.items()
             if len(paths) > 1 and (target := current.get(story_id)) is not None
             for path in paths if path != target and path not in live]
    return sorted(found, key=lambda r: r.path)


def site_file(history: UrlHistory, moved: Sequence[Redirect], config: Config
              ) -> dict[str, Any]:
    """/.well-known/desk-urls.json: the history, and each redirect with the object a
    deploy to object storage gives a website-redirect header and where it points."""
    return {
        "version": HISTORY_VERSION,
        "base_url": config.base_url,
        "stories": history.to_json(),
        "published": history.published_json(),
        "redirects": [{"from": r.path, "to": r.target, "id": r.id,
                       "object": urls.relative_file(r.path),
                       "location": urls.absolute(config, r.target)} for r in moved],
    }


def records_from_json(data: Any, pointer: str = "/published",
                      shared: Mapping[str, str] | None = None) -> dict[str, str]:
    """The records of last publishes in their JSON form (raises ValueError naming the
    pointer when one is not a record): told by one match over them all."""
    if not isinstance(data, dict):
        raise ValueError(f"{pointer}: expected an object of records by story id")
    values = list(data.values())
    if values and not (all(type(v) is str for v in values)
                       and "\n".join(values).count("\n") == len(values) - 1
                       and _RECORDS.fullmatch("\n".join(values) + "\n")):
        bad = next(k for k, v in data.items() if type(v) is not str or "\n" in v
                   or not _RECORDS.fullmatch(v + "\n"))
        raise ValueError(f"{_where(pointer, bad)}: not a record of a publish")
    get = (shared or {}).get
    return {get(k, k): v for k, v in data.items()}


def history_from_json(data: Any, pointer: str = "",
                      shared: Mapping[str, str] | None = None) -> UrlHistory:
    """A history from its JSON form (raises ValueError naming the JSON pointer of the
    first problem: every path must be a story path of the layout, under one id).
    `shared`: strings held already, used for the equal ids and paths."""
    if not isinstance(data, dict):
        raise ValueError(f"{pointer or '/'}: expected an object of story ids")
    for story_id, paths in data.items():
        if type(paths) is not list or not paths:
            raise ValueError(f"{_where(pointer, story_id)}: expected a list of URL paths")
    if not _usual_paths([path for paths in data.values() for path in paths]):
        _check_paths(data, pointer)  # names the first problem
    get = (shared or {}).get
    lists = {get(story_id, story_id): tuple(map(get, paths, paths))
             for story_id, paths in data.items()}
    # As saved, the ids are in order already: sorted only when they are not.
    return UrlHistory(lists if _in_order(lists) else dict(sorted(lists.items())))


def _usual_paths(every: list[Any]) -> bool:
    """Whether every path is a usual story path, each under one id: told by one match
    over them all, each on a line of its own, and one set (a history holds an archive's
    paths, too many to match one at a time on every build)."""
    if not every or not all(type(path) is str for path in every):
        return not every
    text = "\n".join(every) + "\n"
    return (text.count("\n") == len(every)  # no path holds a line break of its own
            and _USUAL_PATHS.fullmatch(text) is not None
            and not any(hyphens in text for hyphens in ("--", "/-", "-/"))
            and len(set(every)) == len(every))


def _check_paths(data: Mapping[str, list[Any]], pointer: str) -> None:
    """Raise ValueError at the first path that is not a story path of the layout or is
    listed twice (paths the usual pattern does not match are judged in full)."""
    seen: set[str] = set()
    for story_id, paths in data.items():
        for i, path in enumerate(paths):
            if not _is_story_path(path) or path in seen:
                raise ValueError(f"{_where(pointer, story_id)}/{i}: not a story URL path, "
                                 "or listed twice")
            seen.add(path)


def _where(pointer: str, story_id: str) -> str:
    return f"{pointer}/{escape_pointer(story_id)}"


def read_history_file(path: Path) -> tuple[UrlHistory | None, list[Finding]]:
    """The history in a desk-urls.json file (None and no finding when there is none)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, []
    except OSError as exc:
        return None, [_problem(path, "", f"cannot read the URL history: {exc.strerror}")]
    try:
        data = orjson.loads(raw)
        if not isinstance(data, dict) or data.get("version") not in HISTORY_VERSIONS:
            raise ValueError(f"/version: expected {HISTORY_VERSION}")
        found = history_from_json(data.get("stories"), "/stories")
        if data.get("published"):
            return replace(found, published=records_from_json(data["published"])), []
        return found, []
    except ValueError as exc:  # orjson's decode error is one too
        where, _, message = str(exc).partition(": ")
        if not where.startswith("/"):
            where, message = "", str(exc)
        return None, [_problem(path, where, f"not a desk URL history: {message}")]


def _problem(path: Path, pointer: str, message: str) -> Finding:
    return Finding(path.as_posix(), pointer, HISTORY_CODE,
                   message + " (fix or remove the file to start a new history)")


# The usual story path, told by one match (a history holds an archive's); a path it does
# not match is judged in full (urls.story_path), so both accept the same paths.
_USUAL_STORY_PATH = re.compile(r"/stories/[0-9]{4}-[0-9]{2}-[0-9]{2}/[a-z0-9]+(?:-[a-z0-9]+)*/")
# The same for many paths, each followed by a line break: a slug of letters, digits and
# hyphens, with no hyphen first, last or twice (tested apart: the pattern is then twice
# as quick).
_USUAL_PATHS = re.compile(r"(?:/stories/[0-9]{4}-[0-9]{2}-[0-9]{2}/[a-z0-9-]+/\n)*")


def _is_story_path(path: object) -> bool:
    if not isinstance(path, str):
        return False
    if _USUAL_STORY_PATH.fullmatch(path):
        return True
    parts = path.split("/")
    if len(parts) != 5 or parts[1] != "stories":
        return False
    try:
        return urls.story_path(parts[2], parts[3]) == path
    except ValueError:
        return False


def _by_id(mapping: Mapping[str, T]) -> Mapping[str, T]:
    """A mapping by id in order: itself when it is a dict in order already (as read back
    or made in order, not a copy of an archive's worth), else a sorted copy."""
    if type(mapping) is dict and _in_order(mapping):
        return mapping
    return dict(sorted(mapping.items()))


def _in_order(urls: Mapping[str, Any]) -> bool:
    previous = ""
    for key in urls:
        if key < previous:
            return False
        previous = key
    return True
