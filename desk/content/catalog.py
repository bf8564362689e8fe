"""The site catalog: which stories readers see, and how they group. Pure, no I/O.

A story's state decides where it shows (see the README's lifecycle table): a draft only
when the clock shows drafts, a held story once due, a withdrawn one nowhere but its
notice; a moved story's old URLs redirect to its page (desk.content.history).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from operator import attrgetter
from typing import Generic, Self, TypeVar

from desk.config import Config
from desk.content.history import Redirect, UrlHistory, redirects
from desk.content.loader import LoadedStory, LoadedWithdrawal, Summary
from desk.content.media import MediaFile
from desk.content.pages import Page

T = TypeVar("T")
G = TypeVar("G", bound="_Corrected")  # a group of stories
EPOCH = datetime.fromisoformat("1970-01-01T00:00:00+00:00")
# A story's last modification, read without a Python frame for each of many stories.
_MODIFIED_AT = attrgetter("summary.modified_at")


def newest(stories: Sequence[LoadedStory]) -> datetime:
    """The latest modification among stories (the epoch when there are none)."""
    return max(map(_MODIFIED_AT, stories), default=EPOCH)


def corrected_places(stories: Sequence[LoadedStory]) -> tuple[int, ...]:
    """The places (0: the first) of the stories whose last modification is not their
    publication (a correction's): all `newest_in` looks at beside one story a page."""
    return tuple(n for n, item in enumerate(stories) if _corrected(item.summary))


def _corrected(summary: Summary) -> bool:
    # Most stories' modification is their publication, the very value once read back.
    modified, published = summary.modified_at, summary.published_at
    return modified is not published and modified != published


def newest_in(stories: Sequence[LoadedStory], corrected: Sequence[int], start: int = 0,
              end: int | None = None) -> datetime:
    """newest(stories[start:end]), the same value, for stories newest first (by their
    publication) given `corrected`, the places of those whose modification is not their
    publication (corrected_places): looked at are those and the first of the others, as
    every later one was published, so modified, no later and is listed after it. A page
    of a list asks for its newest story for its sitemap line: at 100,000 stories, a
    walk over each story of every newsroom, beat, agent and edition on every build."""
    end = len(stories) if end is None else end
    if start >= end:
        return EPOCH
    if not corrected:  # most lists: the first story is the newest
        return stories[start].summary.modified_at
    places = corrected[bisect_left(corrected, start): bisect_left(corrected, end)]
    plain = start  # the first place of the others (none when it reaches `end`)
    for place in places:
        if place != plain:
            break
        plain += 1
    found: datetime | None = None
    for place in sorted((*places, plain) if plain < end else places):
        modified = stories[place].summary.modified_at
        if found is None or modified > found:  # the first of equal ones, as max() gives
            found = modified
    assert found is not None
    return found


def page_newest(stories: Sequence[LoadedStory], corrected: Sequence[int],
                page: Slice[LoadedStory]) -> datetime:
    """newest(page.items) for a page of a list of stories (see newest_in)."""
    return newest_in(stories, corrected, page.start, page.start + len(page.items))


class _Corrected:
    """Where a group's corrected stories stand (see corrected_places): made from its
    stories when asked for, unless the catalog that grouped them knew it already."""

    stories: tuple[LoadedStory, ...]  # the group's own field

    @cached_property
    def corrected(self) -> tuple[int, ...]:
        return corrected_places(self.stories)

    def knowing(self, corrected: tuple[int, ...]) -> Self:
        """This group, its corrected stories' places known (made with its stories)."""
        self.__dict__["corrected"] = corrected  # the cached property's own place
        return self


@dataclass(frozen=True)
class Group(_Corrected):
    """Stories sharing a newsroom or an edition, newest first."""

    key: str
    title: str
    stories: tuple[LoadedStory, ...]

    @cached_property
    def newest(self) -> datetime:
        """The latest modification among its stories (the epoch when there are none):
        asked for by its page's sitemap line and its page of the list of groups, for
        each of 40,000 editions at 100,000 stories."""
        return newest_in(self.stories, self.corrected)

    def knowing(self, corrected: tuple[int, ...]) -> Self:
        """This group, its corrected stories' places known, and so its newest (told now
        rather than by a cached property's first read for each of 40,000 editions)."""
        super().knowing(corrected)
        self.__dict__["newest"] = newest_in(self.stories, corrected)
        return self


@dataclass(frozen=True)
class Beat(_Corrected):
    """The stories of one beat of one newsroom, newest first."""

    newsroom: str
    key: str
    title: str
    stories: tuple[LoadedStory, ...]


@dataclass(frozen=True)
class Corrected:
    """One change record of a published story (a correction, a clarification, an update or
    an editor's note), as the corrections log lists it."""

    at: datetime
    text: str
    story: LoadedStory
    kind: str = "correction"


@dataclass(frozen=True)
class Content:
    """The valid files of the content folder: stories, drafts, withdrawals and pages."""

    stories: tuple[LoadedStory, ...]
    drafts: tuple[LoadedStory, ...] = ()
    withdrawals: tuple[LoadedWithdrawal, ...] = ()
    pages: tuple[Page, ...] = ()


@dataclass(frozen=True)
class Notice:
    """A withdrawn story, and the URL path its withdrawal notice takes (None when the
    story was never published: nothing to give notice of)."""

    id: str
    path: str | None
    withdrawn_at: datetime
    reason: str
    file: str


@dataclass(frozen=True)
class Catalog:
    """The published stories (with the drafts, when shown), newest first, grouped by
    newsroom and by edition; the held ones, the skipped drafts, the withdrawal notices,
    the redirects and the URL history after this build."""

    published: tuple[LoadedStory, ...]
    held: tuple[LoadedStory, ...]
    newsrooms: tuple[Group, ...]
    editions: tuple[Group, ...]
    by_path: dict[str, LoadedStory] = field(repr=False)
    last_modified: datetime = EPOCH  # of any published story
    newsroom_index: dict[str, Group] = field(repr=False, default_factory=dict)
    skipped: tuple[LoadedStory, ...] = ()
    notices: tuple[Notice, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    moved: Mapping[str, str] = field(repr=False, default_factory=dict)  # old path -> new
    history: UrlHistory = field(repr=False, default_factory=UrlHistory)
    # The image files the shown stories name, by content path (desk.content.media).
    media: Mapping[str, MediaFile] = field(repr=False, default_factory=dict)
    pages: tuple[Page, ...] = ()  # the newsroom's own pages, in path order
    beats: tuple[Beat, ...] = ()  # by newsroom, then beat
    agents: tuple[Group, ...] = ()  # the writing agents, in key order
    corrections: tuple[Corrected, ...] = ()  # of every published story, newest first

    @property
    def latest_edition(self) -> Group | None:
        """The newest edition, or None on an empty site."""
        return self.editions[0] if self.editions else None

    @property
    def next_due(self) -> datetime | None:
        """When the earliest held story becomes due."""
        return min((s.summary.published_at for s in self.held), default=None)

    def newsroom(self, key: str) -> Group:
        """The group of one newsroom."""
        return self.newsroom_index[key]


def archive_pages(count: int, size: int) -> int:
    """How many archive pages a list of `count` items has beside its latest page (see
    `stable_pages`)."""
    return max(0, count // size - 1)


@dataclass(frozen=True)
class Slice(Generic[T]):
    """One page of a list: its number (0: the latest page; archive pages count from 1,
    the oldest), its items, its path and its neighbours' paths (`prev_path` newer,
    `next_path` older). `archived` is the latest page's count of archive pages; an archive
    page has 0, as it must not change when pages are added after it."""

    number: int
    archived: int
    items: Sequence[T]
    path: str
    prev_path: str | None
    next_path: str | None
    # The place of its first item in the list (an archive page's moves as items are
    # added before it: not part of what the page is).
    start: int = field(default=0, compare=False)


def stable_pages(items: Sequence[T], size: int, path_of: Callable[[int], str]
                 ) -> Iterator[Slice[T]]:
    """The pages of a list of items given newest first, newest page first.

    Archive pages hold `size` items each, counted from the oldest, so a new item changes
    the latest page only, never an archive page: an hourly build renders one or two list
    pages per newsroom instead of all of them. The latest page (`path_of(0)`) shows the
    items no archive page holds: all of them when there are fewer than 2 × `size`, else
    between `size` and 2 × `size` − 1.
    """
    for number in page_numbers(len(items), size):
        yield stable_page(items, size, path_of, number)


def page_numbers(count: int, size: int) -> list[int]:
    """The numbers of the pages stable_pages makes of `count` items, in its order."""
    return [0, *range(archive_pages(count, size), 0, -1)]


def stable_page(items: Sequence[T], size: int, path_of: Callable[[int], str], number: int
                ) -> Slice[T]:
    """The page of this number that stable_pages makes (see page_numbers)."""
    count = len(items)
    archived = archive_pages(count, size)
    if number == 0:
        return Slice(0, archived, items[:count - archived * size], path_of(0), None,
                     path_of(archived) if archived else None)
    end = count - (number - 1) * size
    return Slice(number, 0, items[end - size: end], path_of(number),
                 path_of(number + 1 if number < archived else 0),
                 path_of(number - 1) if number > 1 else None, end - size)


@dataclass(frozen=True)
class Clock:
    """The build time, whether stories dated after it are published anyway, whether
    drafts are shown (desk serve, `desk build --drafts`), and whether a story whose file
    fails its checks is held back (desk.build.holdback) rather than refusing the build
    (`desk build --hold-back`)."""

    now: datetime
    future: bool = False
    drafts: bool = False
    hold_back: bool = False

    def publishes(self, when: datetime) -> bool:
        """True when a story published at `when` is out."""
        return self.future or when <= self.now


_NEWEST = attrgetter("summary.published_at", "summary.id")
_CORRECTION = attrgetter("at", "story.summary.published_at", "story.summary.id")


def newest_first(stories: list[LoadedStory]) -> list[LoadedStory]:
    """Sort by published_at, then id, newest first."""
    return sorted(stories, key=_NEWEST, reverse=True)


def newsroom_title(key: str, stories: tuple[LoadedStory, ...], config: Config) -> str:
    """A newsroom's title: the stories' own newsroom_title, then config, then the key."""
    for item in stories:
        if item.summary.newsroom_title:
            return item.summary.newsroom_title
    return config.newsrooms.get(key) or key.replace("-", " ").title()


def build_catalog(content: Content, config: Config, clock: Clock,
                  history: UrlHistory | None = None) -> Catalog:
    """Split stories into published and held (not yet out), drafts into shown and
    skipped, leave the withdrawn ones out; group the published ones; place the withdrawal
    notices and the redirects of moved stories (`history`: the URLs published so far)."""
    history = history or UrlHistory()
    withdrawn: dict[str, LoadedWithdrawal] = {}
    for item in content.withdrawals:
        withdrawn.setdefault(item.id, item)
    due, waiting = _sorted_out(content.stories, withdrawn, clock)
    held = tuple(sorted(waiting, key=_NEWEST))  # oldest first
    drafts = tuple(s for s in content.drafts if s.summary.id not in withdrawn)
    shown = drafts if clock.drafts else ()
    published = newest_first([*due, *shown])
    groups = _Groups.of(published, config)
    taken = groups.by_path.keys()
    notices = tuple(_notices(content.stories, withdrawn, history, clock, taken))
    # The pages of published stories and notices are in the history; drafts' are not.
    pages = [(s.summary.id, s.url_path) for s in due]
    pages += [(n.id, n.path) for n in notices if n.path is not None]
    after = history.advance(pages)
    # The live pages: the published stories' and the notices' (the due stories' are
    # published).
    moves = redirects(after, dict(pages), taken | {n.path for n in notices if n.path})
    return Catalog(
        published=tuple(published),
        held=held,
        newsrooms=groups.newsrooms,
        editions=groups.editions,
        by_path=groups.by_path,
        last_modified=groups.last_modified,
        newsroom_index={g.key: g for g in groups.newsrooms},
        skipped=() if clock.drafts else drafts,
        notices=notices,
        redirects=tuple(moves),
        moved={r.path: r.target for r in moves},
        history=after,
        pages=content.pages,
        beats=groups.beats,
        agents=groups.agents,
        corrections=groups.corrections,
    )


def _sorted_out(stories: Sequence[LoadedStory], withdrawn: Mapping[str, LoadedWithdrawal],
                clock: Clock) -> tuple[list[LoadedStory], list[LoadedStory]]:
    """The stories not withdrawn: those due, and those held until their time."""
    due: list[LoadedStory] = []
    waiting: list[LoadedStory] = []
    for item in stories:
        summary = item.summary
        if withdrawn and summary.id in withdrawn:
            continue
        (due if clock.publishes(summary.published_at) else waiting).append(item)
    return due, waiting


@dataclass(frozen=True)
class _Groups:
    """The published stories by path, newsroom, edition, beat and agent, with their
    corrections and latest modification."""

    by_path: dict[str, LoadedStory]
    newsrooms: tuple[Group, ...]  # in key order
    editions: tuple[Group, ...]  # newest first
    beats: tuple[Beat, ...]  # by newsroom, then beat
    agents: tuple[Group, ...]  # in key order
    corrections: tuple[Corrected, ...]  # newest first
    last_modified: datetime

    @classmethod
    def of(cls, published: Sequence[LoadedStory], config: Config) -> _Groups:
        """Each group's stories newest first, as `published` gives them: made in one pass
        over the stories, as every story is looked at again for each grouping otherwise
        (at 100,000 stories, a tenth of a second of each build)."""
        by_path: dict[str, LoadedStory] = {}
        by_newsroom: defaultdict[str, list[LoadedStory]] = defaultdict(list)
        by_edition: defaultdict[str, list[LoadedStory]] = defaultdict(list)
        by_beat: defaultdict[tuple[str, str], list[LoadedStory]] = defaultdict(list)
        by_agent: defaultdict[str, list[LoadedStory]] = defaultdict(list)
        # The places of the corrected stories in each group's list, by its list's id.
        corrected: defaultdict[int, list[int]] = defaultdict(list)
        found: list[Corrected] = []
        last = EPOCH
        for item in published:
            summary = item.summary
            by_path[item.url_path] = item
            # Each group named and filled in turn (a loop over them cost more).
            newsroom = by_newsroom[summary.newsroom]
            newsroom.append(item)
            edition = by_edition[summary.edition]
            edition.append(item)
            beat = agent = None
            if summary.beat:
                beat = by_beat[summary.newsroom, summary.beat]
                beat.append(item)
            if summary.agent:
                agent = by_agent[summary.agent]
                agent.append(item)
            if summary.corrections:
                found += _corrections_in(item)
            if _corrected(summary):
                for stories in (newsroom, edition, beat, agent):
                    if stories is not None:
                        corrected[id(stories)].append(len(stories) - 1)
            if summary.modified_at > last or last is EPOCH:
                last = summary.modified_at

        def made(group: G, stories: list[LoadedStory]) -> G:
            return group.knowing(tuple(corrected.get(id(stories), ())))

        return cls(
            by_path,
            tuple(made(Group(key, newsroom_title(key, made_of, config), made_of), stories)
                  for key, stories in sorted(by_newsroom.items())
                  if (made_of := tuple(stories))),
            tuple(made(Group(key, key, tuple(stories)), stories)
                  for key, stories in sorted(by_edition.items(), reverse=True)),
            tuple(made(Beat(newsroom, key, beat_title(key, config), tuple(stories)), stories)
                  for (newsroom, key), stories in sorted(by_beat.items())),
            tuple(made(Group(key, key, tuple(stories)), stories)
                  for key, stories in sorted(by_agent.items())),
            _newest_corrections(found), last)


def _notices(stories: Sequence[LoadedStory], withdrawn: Mapping[str, LoadedWithdrawal],
             history: UrlHistory, clock: Clock, taken: Set[str]) -> Iterator[Notice]:
    """Each withdrawal's notice: at the story's URL if it is due, else at the newest URL
    it was published at; none when it never was, or a live story has that URL now."""
    due = {s.summary.id: s.url_path for s in stories
           if s.summary.id in withdrawn and clock.publishes(s.summary.published_at)}
    for story_id, item in sorted(withdrawn.items()):
        path = due.get(story_id) or history.latest(story_id)
        yield Notice(story_id, None if path in taken else path, item.withdrawn_at,
                     item.reason, item.path)


def beat_title(key: str, config: Config) -> str:
    """A beat's title: from the settings, else its key in words."""
    return config.beats.get(key) or key.replace("-", " ").capitalize()


def _corrections_in(item: LoadedStory) -> list[Corrected]:
    return [Corrected(at, text, item, kind) for at, text, kind in item.summary.corrections]


def _newest_corrections(found: list[Corrected]) -> tuple[Corrected, ...]:
    found.sort(key=_CORRECTION, reverse=True)
    return tuple(found)
