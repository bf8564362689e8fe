"""The catalog of content that differs from the last build's by stories changed in place.

In: the last catalog with what it was made from (Cataloged), and this build's content,
settings, clock and URL history. Out: the catalog build_catalog makes of them, with what
it was made from: made by putting the changed stories where their last versions were,
unless a change moves a story (another newsroom, edition, beat, agent, date or URL, a
story added or gone, a withdrawal, a page, the settings, a story falling due...): then
it is made anew. A long-running process (desk serve) keeps its last Cataloged, so an editor's
save does not group and order 100,000 stories again. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from desk.config import Config
from desk.content.catalog import (
    Beat,
    Catalog,
    Clock,
    Content,
    Group,
    build_catalog,
    corrections_of,
    newest,
)
from desk.content.history import UrlHistory
from desk.content.loader import LoadedStory

T = TypeVar("T", Group, Beat)
# More changed stories than this: a build that is not an editor's save; made anew.
MOST_CHANGED = 64


@dataclass(frozen=True)
class Cataloged:
    """A catalog and what it was made from: the content, settings and clock of its build;
    when it was made from the last one (`base`), the last versions of the stories it put
    new ones in place of (`replaced`: every other story is where it was, the very same)."""

    content: Content
    config: Config
    clock: Clock
    catalog: Catalog
    base: Catalog | None = None
    replaced: tuple[LoadedStory, ...] = ()


def catalog_after(last: Cataloged | None, content: Content, config: Config, clock: Clock,
                  history: UrlHistory) -> Cataloged:
    """build_catalog(content, config, clock, history) with what it was made from: made
    from `last` when `content` differs from its content by stories changed in place only."""
    made = _made_in_place(last, content, config, clock, history) if last is not None else None
    if last is None or made is None:
        return Cataloged(content, config, clock, build_catalog(content, config, clock, history))
    catalog, pairs = made
    catalog = replace(catalog, media={}, **_made_again(catalog, pairs))
    return Cataloged(content, config, clock, catalog, last.catalog,
                     tuple(old for old, _ in pairs))


def _made_again(catalog: Catalog, pairs: Sequence[tuple[LoadedStory, LoadedStory]]
                ) -> dict[str, Any]:
    """What the catalog makes of all its published stories and the stories put in place
    may change: the corrections log, when one of them has a correction (its entries name
    the story), and the latest modification, when one of them was modified at another
    time (or offset). Made again only then: each is a walk over every story, on every
    save of desk serve."""
    made: dict[str, Any] = {}
    if any(old.summary.corrections or new.summary.corrections for old, new in pairs):
        made["corrections"] = corrections_of(catalog.published)
    if any(_modified(old) != _modified(new) for old, new in pairs):
        made["last_modified"] = newest(catalog.published)
    return made


def _modified(item: LoadedStory) -> tuple[datetime, timedelta | None]:
    modified = item.summary.modified_at
    return modified, modified.utcoffset()


def _made_in_place(last: Cataloged, content: Content, config: Config, clock: Clock,
                   history: UrlHistory
                   ) -> tuple[Catalog, list[tuple[LoadedStory, LoadedStory]]] | None:
    """The last catalog with the stories changed since put where their last versions
    were, and each of them with its last version, when each takes its last version's
    place and nothing else changed; else None."""
    withdrawn = {item.id for item in content.withdrawals}
    if not _same_frame(last, content, (config, clock, history), withdrawn):
        return None
    pairs = _changed_pairs(last.content, content)
    if pairs is None:
        return None
    catalog: Catalog | None = last.catalog
    for old, new in pairs:
        if catalog is None or old.summary.id in withdrawn or not _same_place(old, new):
            return None
        catalog = _placed(catalog, old, new)
    return (catalog, pairs) if catalog is not None else None


def _same_frame(last: Cataloged, content: Content,
                made_under: tuple[Config, Clock, UrlHistory], withdrawn: set[str]) -> bool:
    """Whether everything but the stories is as the last catalog had it: its settings,
    withdrawals (`withdrawn`: their ids) and pages; the URL history it left; a clock that
    publishes what it did."""
    config, clock, history = made_under
    then = last.clock
    if (clock.future, clock.drafts) != (then.future, then.drafts) or clock.now < then.now:
        return False
    due = last.catalog.next_due
    if due is not None and clock.publishes(due):
        return False  # a held story falls due
    if withdrawn and clock.now != then.now and any(
            clock.publishes(s.summary.published_at) != then.publishes(s.summary.published_at)
            for s in content.stories if s.summary.id in withdrawn):
        return False  # a withdrawal notice moves
    return (history is last.catalog.history and config == last.config
            and content.withdrawals == last.content.withdrawals
            and content.pages == last.content.pages)


def _changed_pairs(then: Content, now: Content
                   ) -> list[tuple[LoadedStory, LoadedStory]] | None:
    """The stories and drafts whose records differ (last version, this one), file by file;
    None when a file came or went, or too many changed."""
    pairs: list[tuple[LoadedStory, LoadedStory]] = []
    for old_items, new_items in ((then.stories, now.stories), (then.drafts, now.drafts)):
        if len(old_items) != len(new_items):
            return None
        pairs += [(old, new) for old, new in zip(old_items, new_items, strict=True)
                  if old is not new]
        if len(pairs) > MOST_CHANGED:
            return None
    if any(old.path != new.path for old, new in pairs):
        return None
    return pairs


def _same_place(old: LoadedStory, new: LoadedStory) -> bool:
    """Whether a story's new version takes its last version's place in every list: the
    same URL, draft or not, and what groups and orders it."""
    a, b = old.summary, new.summary
    return (old.url_path == new.url_path and old.draft == new.draft and a.id == b.id
            and a.newsroom == b.newsroom and a.newsroom_title == b.newsroom_title
            and a.edition == b.edition and a.published_at == b.published_at
            and a.beat == b.beat and a.agent == b.agent)


def _placed(catalog: Catalog, old: LoadedStory, new: LoadedStory) -> Catalog | None:
    """The catalog with `new` where `old` is: among the published stories, the held ones
    or the skipped drafts; None when it is in none of them."""
    if catalog.by_path.get(old.url_path) is old:
        return _published_swapped(catalog, old, new)
    if any(item is old for item in catalog.held):
        return replace(catalog, held=_swapped(catalog.held, old, new))
    if any(item is old for item in catalog.skipped):
        return replace(catalog, skipped=_swapped(catalog.skipped, old, new))
    return None


def _published_swapped(catalog: Catalog, old: LoadedStory, new: LoadedStory) -> Catalog:
    """The catalog with a published story's new version in place of its last one."""
    s = old.summary
    newsrooms = _groups_swapped(catalog.newsrooms, lambda g: g.key == s.newsroom, old, new)
    by_path = dict(catalog.by_path)
    by_path[old.url_path] = new
    return replace(
        catalog,
        published=_swapped(catalog.published, old, new),
        newsrooms=newsrooms,
        editions=_groups_swapped(catalog.editions, lambda g: g.key == s.edition, old, new),
        by_path=by_path,
        newsroom_index={group.key: group for group in newsrooms},
        beats=_groups_swapped(catalog.beats, lambda b: (b.newsroom, b.key) == (
            s.newsroom, s.beat), old, new) if s.beat else catalog.beats,
        agents=_groups_swapped(catalog.agents, lambda g: g.key == s.agent, old, new)
        if s.agent else catalog.agents,
    )


def _groups_swapped(groups: tuple[T, ...], holds: Callable[[T], bool], old: LoadedStory,
                    new: LoadedStory) -> tuple[T, ...]:
    """The groups with the one that `holds` the story made again with `new` in place of
    `old`; the others are the very same groups (and keep what they worked out)."""
    return tuple(replace(group, stories=_swapped(group.stories, old, new)) if holds(group)
                 else group for group in groups)


def _swapped(items: Sequence[LoadedStory], old: LoadedStory, new: LoadedStory
             ) -> tuple[LoadedStory, ...]:
    """The items with `new` in place of `old` (found by identity)."""
    return tuple(new if item is old else item for item in items)
