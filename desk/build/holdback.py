"""Holding back: a build that publishes every good story while the bad ones wait.

`desk build --hold-back` (what the publish workflows run) does not refuse the site over
one story. A story whose file fails its checks — its own, and those across stories that
name its file (a duplicate URL or id) — is held back instead:

- published before (the site being replaced holds its pages at the newest URL the URL
  history knows for its id, under that id): its last published `index.json`, which
  round-trips to the story model, stands in for it in this build, so it keeps its place
  in lists, feeds and sitemaps as last published, and its pages are kept byte for byte;
- otherwise it is new (or its last pages are not there) and appears nowhere.

A held story keeps its URL and id: a story of the content that would take either is held
back too (so a story whose id two files claim stays as last published until one gives it
up). Errors about no single story file (templates, settings, the content folder,
withdrawal files, the output folder) still refuse the build, as `desk check` and a plain
`desk build` refuse any error.
"""

from __future__ import annotations

import hashlib
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from pydantic import ValidationError

from desk import urls
from desk.build.inspection import Inspection
from desk.config import Config
from desk.content.catalog import Content
from desk.content.checks import check_across
from desk.content.digests import digest, search_entry
from desk.content.findings import Finding, sort_findings
from desk.content.history import UrlHistory
from desk.content.loader import LoadedStory, ParsedStory, Summary, story_url_path
from desk.content.models import Story

# A story's pages, as its unit keeps them.
STORY_PAGES = ("index.html", "index.md", "index.json")
# An "id" member in a file too broken to parse: where its id may still be read.
_ID_MEMBER = re.compile(rb'"id"\s*:\s*("(?:[^"\\\r\n]|\\.){1,200}")')


# The last published site, as a held story's pages are read from it: a site-relative
# file's bytes, OSError when it has none.
PublishedSite = Callable[[str], bytes]
# Seconds to wait for one page of the live site.
FETCH_TIMEOUT = 20


def site_folder(folder: Path) -> PublishedSite:
    """The last published site as the output folder holds it."""
    return lambda relative: (folder / relative).read_bytes()


def live_site(base_url: str) -> PublishedSite:
    """The last published site as it is served at base_url (for a build that writes only
    the changes, on a machine that has no copy of the site)."""
    def read(relative: str) -> bytes:
        try:
            with urllib.request.urlopen(base_url.rstrip("/") + "/" + relative,
                                        timeout=FETCH_TIMEOUT) as response:
                data: bytes = response.read()
                return data
        except (urllib.error.URLError, ValueError, TimeoutError) as exc:
            raise OSError(f"{relative}: {exc}") from None
    return read


@dataclass(frozen=True)
class StandIn:
    """A held story's last published version: its record in this build's catalog (under
    the held file's path), the model read from its index.json, and its pages: the files
    (site-relative), a digest of their bytes, the digest of its index.json and its
    index.md."""

    item: LoadedStory
    parsed: ParsedStory
    files: tuple[str, ...]
    pages: tuple[bytes, ...]  # the files' bytes, in the same order
    digest: str
    json_digest: str
    markdown: bytes


@dataclass(frozen=True)
class HeldStory:
    """A story file held back: its findings (errors first), the URL path of the last
    published pages it keeps (None: held as new, so it appears nowhere) and a note that
    says which."""

    path: str
    findings: tuple[Finding, ...]
    kept: str | None
    note: str

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The findings that hold it back."""
        return tuple(f for f in self.findings if f.is_error)


@dataclass(frozen=True)
class HoldBack:
    """What a build that holds back publishes: the content the catalog takes (stand-ins
    in place of held stories published before), the findings that count for the build
    (the held stories' are theirs), the held stories, and the stand-ins by URL path."""

    content: Content
    findings: tuple[Finding, ...]
    held: tuple[HeldStory, ...] = ()
    stand_ins: Mapping[str, StandIn] = field(default_factory=dict)

    @property
    def parsed(self) -> dict[str, ParsedStory]:
        """The stand-ins' models by (held) file path, for the renderers to read."""
        return {s.item.path: s.parsed for s in self.stand_ins.values()}


def hold_back(inspection: Inspection, counted: Sequence[Finding], config: Config,
              history: UrlHistory, published: tuple[PublishedSite, str],
              images: Sequence[Finding] = ()) -> HoldBack:
    """Sort the inspected content into what publishes and what is held back (`counted`:
    the findings that count for this build; `history` and `published`: the URLs published
    so far and the site they are in, with its name for notes; `images`: the findings of
    the image files the stories name, each at the story naming it)."""
    if not any(f.is_error for f in (*counted, *images)):
        return HoldBack(inspection.content, (*counted, *images))  # nothing to hold back
    files = set(inspection.story_files)
    held: dict[str, list[Finding]] = {
        path: [] for path in inspection.story_files
        if inspection.own[path][0] is None or any(f.is_error for f in inspection.own[path][1])}
    for finding in images:
        if finding.is_error and finding.path in files:
            held.setdefault(finding.path, [])
    stand_ins: dict[str, StandIn] = {}
    notes: dict[str, str] = {}
    while True:
        live = [s for s in inspection.stories if s.path not in held]
        for path in held:
            if path not in notes:
                taken = {s.item.summary.id: p for p, s in stand_ins.items()}
                found, notes[path] = find_stand_in(path, inspection, history, published,
                                                   taken)
                if found is not None:
                    stand_ins[path] = found
        # The stand-ins come first: a story that takes a held story's URL is the second.
        across = check_across([s.item for s in stand_ins.values()] + live, config)
        blamed = [f for f in across if f.is_error and f.path not in held]
        if not blamed:
            break
        for finding in blamed:
            held.setdefault(finding.path, []).append(finding)
    story_findings = [f for f in (*counted, *images) if f.path in files]
    live_paths = {s.path for s in live}
    return HoldBack(
        Content(tuple(sorted([*live, *(s.item for s in stand_ins.values())],
                             key=lambda s: s.path)),
                inspection.drafts, inspection.withdrawals, inspection.pages),
        tuple(sort_findings([*_counted(counted, files, live, across, inspection),
                             *(f for f in images if f.path in live_paths)])),
        tuple(HeldStory(path, _findings_of(path, story_findings, extra),
                        stand_ins[path].item.url_path if path in stand_ins else None,
                        notes[path]) for path, extra in sorted(held.items())),
        {s.item.url_path: s for s in stand_ins.values()})


def _counted(counted: Sequence[Finding], files: set[str], live: Sequence[LoadedStory],
             across: Sequence[Finding], inspection: Inspection) -> Iterator[Finding]:
    """The findings that count once the held stories are out: those about no story file
    (withdrawals, folders, settings), and the published stories' own and across ones,
    the latter checked again without the held stories."""
    across_now = set(across)
    yield from (f for f in counted if f.path not in files and f not in across_now)
    live_paths = {s.path for s in live}
    for item in live:
        yield from inspection.own[item.path][1]
    yield from (f for f in across if f.path in live_paths or f.path not in files)


def _findings_of(path: str, story_findings: Sequence[Finding], extra: Sequence[Finding]
                 ) -> tuple[Finding, ...]:
    """A held file's findings: as inspected, and the ones that held it back since."""
    found = [f for f in story_findings if f.path == path]
    found += [f for f in extra if f not in found]
    return tuple(sort_findings(found))


def find_stand_in(path: str, inspection: Inspection, history: UrlHistory,
                  published: tuple[PublishedSite, str], taken: Mapping[str, str]
                  ) -> tuple[StandIn | None, str]:
    """The last published version of a held file's story, if the published site has its
    pages, and a note on what is kept (`taken`: the held files whose last published
    versions this build keeps, by id; an id is kept for one file only)."""
    site, where = published
    item, _ = inspection.own[path]
    ids = [item.summary.id] if item is not None else ids_in(path)
    missing = None
    for story_id in ids:
        url = history.latest(story_id)
        if url is None:
            continue
        if story_id in taken:
            return None, (f"new: the last published pages of its id ({url}) stay for "
                          f"{taken[story_id]}, held back too")
        found = read_stand_in(path, story_id, url, site)
        if found is not None:
            return found, f"its last published pages stay at {url}"
        missing = missing or url
    if missing is not None:
        return None, (f"its last published pages ({missing}) are not in {where}, so it is "
                      "held as a new story: it appears nowhere until fixed")
    return None, "new: it appears nowhere until fixed"


def ids_in(path: str) -> list[str]:
    """The story id a broken file states: its "id" when it parses as JSON, else every
    "id" member its text holds (a published page must then confirm one)."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return []
    try:
        data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        found: list[str] = []
        for match in _ID_MEMBER.finditer(raw):
            try:
                value = orjson.loads(match.group(1))
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, str) and value not in found:
                found.append(value)
        return found
    story_id = data.get("id") if isinstance(data, dict) else None
    return [story_id] if isinstance(story_id, str) else []


def read_stand_in(path: str, story_id: str, url: str, site: PublishedSite) -> StandIn | None:
    """The stand-in read from the pages at `url` of the published site, if they are all
    there and their index.json is the story `story_id` at that URL."""
    try:
        files = tuple(urls.relative_file(url + name) for name in STORY_PAGES)
        pages = [site(name) for name in files]
        data = orjson.loads(pages[2])
        story = Story.model_validate(data)
    except (ValueError, OSError, ValidationError):  # JSONDecodeError is a ValueError
        return None
    if story.id != story_id or story_url_path(story) != url:
        return None
    json_digest = hashlib.sha256(pages[2]).hexdigest()
    item = LoadedStory(path, Summary.of(story), json_digest, url, search_entry(url, json_digest))
    return StandIn(item, ParsedStory(story, data, json_digest), files, tuple(pages),
                   digest(*pages),
                   json_digest, pages[1])
