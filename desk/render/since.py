"""Since the last build: which groups of stories (a newsroom, an edition, a beat, an
agent) may show something new on their list pages.

A list page's inputs are the keys of its member stories in their order, its place among
its group's pages, what the group shows of itself (its title, an edition's neighbours)
and the site key. A story's key covers all a list shows of it, its newsroom's title
included, and every story's key covers the site key. So when no member's key changed, no
story joined or left the group and, for an edition, no edition came or went beside it,
each page of the group has the inputs the last build gave it and its key stands: a build
from the saved state need not make the inputs of every list page of the archive to learn
that nothing changed on most of them.

Within a group that did change, most archive pages keep theirs too: archive pages are
counted from the oldest story (desk.content.catalog.stable_pages), so a page whose
stories all come before the oldest story that joined or left the group holds the same
stories in the same place, under the same keys unless one of them changed where it
stands.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter

from desk import urls
from desk.content.catalog import Catalog, archive_pages
from desk.content.loader import LoadedStory, Summary

# ("newsroom", key), ("edition", key), ("beat", "NEWSROOM/BEAT"), ("agent", key), and the
# sitemap's parts that list stories and editions ("sitemap", "stories-2026-11").
GroupName = tuple[str, str]
# Where a story stands in its groups' lists: they are sorted by it, newest first.
Place = tuple[datetime, str]


@dataclass(frozen=True)
class ListKind:
    """A kind of list of stories, newest first (a newsroom's, an edition's...): the group
    of this kind a story's summary puts it in ("" for none). What a page of such a list
    depends on is its group's stories (their keys and places), so a change to a story
    touches the pages of its groups, and no others."""

    name: str
    group_of: Callable[[Summary], str]

    def group(self, key: str) -> GroupName:
        """The name of this kind's group `key`."""
        return self.name, key


NEWSROOM = ListKind("newsroom", attrgetter("newsroom"))
EDITION = ListKind("edition", attrgetter("edition"))
BEAT = ListKind("beat", lambda s: f"{s.newsroom}/{s.beat}" if s.beat else "")
AGENT = ListKind("agent", attrgetter("agent"))

# Every kind of list. A new one is one entry here, declared by the page kind that
# renders it (PageKind.lists, desk.render.site.REGISTRY); tests/test_site.py fails when
# a page kind asks for a group of a kind it does not declare, or one is left out here.
LIST_KINDS: tuple[ListKind, ...] = (NEWSROOM, EDITION, BEAT, AGENT)


def groups_of(summary: Summary) -> Iterator[GroupName]:
    """The groups whose list pages show a story: one of each kind it belongs to."""
    for kind in LIST_KINDS:
        key = kind.group_of(summary)
        if key:
            yield kind.name, key


@dataclass(frozen=True)
class Changes:
    """Where the stories that changed in a group stand in its list (see Place): those
    that joined or left it (`shifted`: each story older than them moves by one), and
    those that changed where they stand, in the list then and now (`in_place`)."""

    shifted: frozenset[Place]
    in_place: frozenset[Place]


@dataclass(frozen=True)
class Since:
    """The groups whose list pages may differ from the last build's; every other group's
    pages have the inputs they had then. `changes`: what changed in each touched group
    (none for an edition touched by its neighbours)."""

    touched: frozenset[GroupName]
    changes: Mapping[GroupName, Changes] = field(default_factory=dict)

    def settled(self, name: GroupName, stories: Sequence[LoadedStory], size: int
                ) -> Callable[[int], bool]:
        """Which pages of a group's list (its `stories` newest first, `size` to a page;
        by number: 0 the latest, archive pages from 1, the oldest) have the inputs the
        last build gave them: all of an untouched group's, some archive pages of a
        touched one's."""
        if name not in self.touched:
            return _every_page
        changes = self.changes.get(name)
        if changes is None:
            return _no_page  # touched by its neighbours (an edition): nothing known
        count = len(stories)
        if changes.shifted:
            # A page before the oldest story that joined or left holds the stories it
            # held, but for those changed in place. Its links stay as they were while an
            # archive page follows it now and did then: the group had at least
            # count − len(shifted) stories then, and each page of those is a page now.
            first = min(_older(stories, place) for place in changes.shifted)
            last = min(first // size, archive_pages(count - len(changes.shifted), size) - 1)
        else:  # as many stories as then, in the same places: the same pages
            last = archive_pages(count, size)
        edited = {_older(stories, place) // size + 1 for place in changes.in_place}
        return lambda number: 0 < number <= last and number not in edited


def since_last(catalog: Catalog, changed: Collection[str], left: Iterable[LoadedStory]
               ) -> Since:
    """What changed since the last build: `changed`, the paths of the published stories
    whose key may differ from the last build's; `left`, the last versions of the stories
    whose file changed or went since, and of those no longer published."""
    by_path = catalog.by_path
    now = [by_path[path] for path in changed if path in by_path]
    then = list(left)
    places_now, places_then = _places(now), _places(then)
    touched = places_now.keys() | places_then.keys()
    changes = {name: _changes(places_now.get(name, set()), places_then.get(name, set()))
               for name in touched}
    touched.update(_beside(catalog, {key for kind, key in touched if kind == "edition"}))
    # The sitemap's parts that list them: their stories' months, their editions' months.
    paths = [item.url_path for item in (*now, *then)]
    paths += [urls.edition_path(key) for kind, key in touched if kind == "edition"]
    touched.update(("sitemap", urls.sitemap_part_of(path)) for path in paths)
    return Since(frozenset(touched), changes)


def _places(stories: Iterable[LoadedStory]) -> dict[GroupName, set[Place]]:
    """By group, where the stories stand in its list."""
    places: dict[GroupName, set[Place]] = {}
    for item in stories:
        summary = item.summary
        for name in groups_of(summary):
            places.setdefault(name, set()).add((summary.published_at, summary.id))
    return places


def _changes(now: set[Place], then: set[Place]) -> Changes:
    in_place = now & then
    return Changes(frozenset((now | then) - in_place), frozenset(in_place))


def _no_page(number: int) -> bool:
    return False


def _every_page(number: int) -> bool:
    return True


def _older(stories: Sequence[LoadedStory], place: Place) -> int:
    """How many of the stories (newest first) stand before `place`, counted from the
    oldest: the index, from the oldest, of a story there, or of one that was."""
    low, high = 0, len(stories)
    while low < high:  # the first story older than the place
        middle = (low + high) // 2
        summary = stories[middle].summary
        if (summary.published_at, summary.id) < place:
            high = middle
        else:
            low = middle + 1
    return len(stories) - low


def _beside(catalog: Catalog, editions: set[str]) -> Iterator[GroupName]:
    """The editions next to these, whether these are still published or not: each
    edition's page links the one before it and the one after it."""
    if not editions:
        return
    keys = [group.key for group in reversed(catalog.editions)]  # oldest first
    for edition in editions:
        at = bisect_left(keys, edition)
        for key in keys[max(0, at - 1): at + 2]:
            yield "edition", key
