"""A save's catalog made from the last one (desk.content.recatalog) is the catalog made
anew from the same content, or none at all when a change moves a story."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from storygen import make_story

from desk.config import Config
from desk.content.catalog import (
    Catalog,
    Clock,
    Content,
    build_catalog,
    corrected_places,
    newest,
    newest_in,
)
from desk.content.history import UrlHistory
from desk.content.loader import LoadedStory, LoadedWithdrawal
from desk.content.models import Story
from desk.content.recatalog import Cataloged, catalog_after

NOW = datetime(2026, 11, 15, tzinfo=UTC)
START = datetime(2026, 11, 13, 6, tzinfo=UTC)
COUNT = 14  # stories; the last one is not due yet, the one before it is withdrawn
DRAFTS = 2
NEWSROOMS = ("artificial-intelligence", "climate", "markets")
# Edits that leave a story where it was in every list, and edits that move it.
IN_PLACE = ("headline", "correction", "trust", "related")
MOVING = ("newsroom", "published", "beat", "agent", "slug")


def story_data(n: int, edit: str = "") -> dict[str, Any]:
    """Story n (drafts from COUNT on), as last saved, or after `edit`."""
    when = NOW + timedelta(hours=5) if n == COUNT - 1 else START + timedelta(hours=3 * n)
    data = make_story(n, NEWSROOMS[n % 3], when,
                      writer={"agent": ("scout", "scribe")[n % 2], "run_id": f"run-{n}"})
    if n % 4:
        data["beat"] = ("chips", "models", "policy")[n % 3]
    if n % 5 == 0:
        data["corrections"] = [{"at": (when + timedelta(hours=1)).isoformat(),
                                "text": f"First correction of {n}."}]
    changes: dict[str, Any] = {
        "headline": {"headline": f"Edited headline of story {n}"},
        "correction": {"corrections": [*data.get("corrections", []), {
            "at": (when + timedelta(hours=2)).isoformat(), "text": "A later correction."}]},
        "trust": {"labels": {"trust": "reported", "trust_text": "Reported · 1 Manifest"}},
        "related": {"related": [{"url": "https://hangingcontext.com/stories/2026-11-13/"
                                        "story-number-1/", "headline": "Story one"}]},
        "newsroom": {"newsroom": NEWSROOMS[(n + 1) % 3],
                     "newsroom_title": NEWSROOMS[(n + 1) % 3].title()},
        "published": {"published_at": (when - timedelta(minutes=7)).isoformat()},
        "beat": {"beat": "elsewhere"},
        "agent": {"writer": {"agent": "another", "run_id": "run"}},
        "slug": {"slug": f"moved-story-{n}"},
    }
    data.update(changes.get(edit, {}))
    return data


def loaded(n: int, edit: str = "") -> LoadedStory:
    story = Story.model_validate(story_data(n, edit))
    draft = n >= COUNT
    folder = "drafts" if draft else "stories"
    return replace(LoadedStory.of(f"content/{folder}/{n:03d}.json", story, f"{n}:{edit}"),
                   draft=draft)


def content_with(edits: dict[int, str]) -> Content:
    every = [loaded(n, edits.get(n, "")) if n in edits else BASE[n]
             for n in range(COUNT + DRAFTS)]
    return Content(tuple(every[:COUNT]), tuple(every[COUNT:]), WITHDRAWALS)


BASE = [loaded(n) for n in range(COUNT + DRAFTS)]
WITHDRAWALS = (LoadedWithdrawal("content/withdrawn/x.json", BASE[COUNT - 2].summary.id,
                                NOW - timedelta(hours=1), "Retracted."),)


def config() -> Config:
    return Config(base_url="https://hangingcontext.com", content_dir=Path("content"),
                  output_dir=Path("public"))


def last_catalog(clock: Clock) -> Cataloged:
    content, settings_ = content_with({}), config()
    return Cataloged(content, settings_, clock,
                     build_catalog(content, settings_, clock, UrlHistory()))


# Up to four stories edited, each in place or moving.
EDITS = st.dictionaries(st.integers(0, COUNT + DRAFTS - 1), st.sampled_from(IN_PLACE + MOVING),
                        max_size=4)


def made_anew(last: Cataloged, content: Content, clock: Clock) -> Catalog:
    return build_catalog(content, last.config, clock, last.catalog.history)


@settings(max_examples=60, deadline=None)
@given(edits=EDITS, drafts=st.booleans())
def test_a_catalog_made_from_the_last_is_the_one_made_anew(edits: dict[int, str],
                                                           drafts: bool) -> None:
    clock = Clock(NOW, drafts=drafts)
    last = last_catalog(clock)
    content = content_with(edits)
    made = catalog_after(last, content, config(), clock, last.catalog.history)
    assert made.catalog == made_anew(last, content, clock)
    in_place = all(kind in IN_PLACE and n != COUNT - 2 for n, kind in edits.items())
    assert (made.base is last.catalog) == in_place
    if in_place:
        assert {id(s) for s in made.replaced} == {id(BASE[n]) for n in edits}
        # The groups no edit touched are the very ones the last catalog had.
        touched = {BASE[n].summary.newsroom for n in edits}
        kept = [g for g in made.catalog.newsrooms if g.key not in touched]
        assert all(any(g is h for h in last.catalog.newsrooms) for g in kept)
        assert len(kept) == len(NEWSROOMS) - len(touched)


def test_a_held_story_falling_due_or_other_settings_make_the_catalog_anew() -> None:
    clock = Clock(NOW, drafts=True)
    last = last_catalog(clock)
    content = content_with({1: "headline"})
    history = last.catalog.history

    def base(settings_: Config, when: Clock, history_: UrlHistory, content_: Content = content
             ) -> Catalog | None:
        made = catalog_after(last, content_, settings_, when, history_)
        assert made.catalog == build_catalog(content_, settings_, when, history_)
        return made.base

    made = catalog_after(last, content, config(), clock, history)
    assert made.base is last.catalog
    assert made.catalog.newsrooms[2] is last.catalog.newsrooms[2]  # markets: untouched
    later = Clock(NOW + timedelta(hours=6), drafts=True)  # the held story is due then
    assert base(config(), later, history) is None
    assert made_anew(last, content, later) != made.catalog
    assert base(config(), Clock(NOW), history) is None
    assert base(config(), Clock(NOW - timedelta(hours=1), drafts=True), history) is None
    other = config().model_copy(update={"newsrooms": {"climate": "The Climate Desk"}})
    assert base(other, clock, history) is None
    assert base(config(), clock, UrlHistory()) is None
    assert base(config(), clock, history, replace(content, stories=content.stories[:-1])) is None
    assert base(config(), clock, history, replace(content, withdrawals=())) is None
    assert catalog_after(None, content, config(), clock, history).base is None


@settings(max_examples=40, deadline=None)
@given(edits=EDITS, drafts=st.booleans())
def test_the_catalog_s_groups_are_those_their_definitions_give(edits: dict[int, str],
                                                               drafts: bool) -> None:
    """Made in one pass over the published stories (catalog._Groups): each group as its
    own filter of them says, in the order the catalog promises."""
    clock = Clock(NOW, drafts=drafts)
    catalog = build_catalog(content_with(edits), config(), clock, UrlHistory())
    published = catalog.published
    assert list(published) == sorted(published, reverse=True, key=lambda s: (
        s.summary.published_at, s.summary.id))

    def members(test: Any) -> tuple[LoadedStory, ...]:
        return tuple(s for s in published if test(s.summary))

    newsrooms = sorted({s.summary.newsroom for s in published})
    assert [(g.key, g.stories) for g in catalog.newsrooms] == [
        (key, members(lambda m, k=key: m.newsroom == k)) for key in newsrooms]
    assert [(g.key, g.stories) for g in catalog.editions] == [
        (key, members(lambda m, k=key: m.edition == k))
        for key in sorted({s.summary.edition for s in published}, reverse=True)]
    assert [(b.newsroom, b.key, b.stories) for b in catalog.beats] == [
        (room, beat, members(lambda m, r=room, k=beat: (m.newsroom, m.beat) == (r, k)))
        for room, beat in sorted({(s.summary.newsroom, s.summary.beat) for s in published
                                  if s.summary.beat})]
    assert [(g.key, g.stories) for g in catalog.agents] == [
        (key, members(lambda m, k=key: m.agent == k))
        for key in sorted({s.summary.agent for s in published if s.summary.agent})]
    assert catalog.by_path == {s.url_path: s for s in published}
    for group in (*catalog.newsrooms, *catalog.editions, *catalog.agents):
        told = max((s.summary.modified_at for s in group.stories), default=None)
        # The very value max() gives (the first of equal instants), offset included.
        assert group.newest == told and group.newest.utcoffset() == told.utcoffset()
    assert catalog.last_modified == max(s.summary.modified_at for s in published)
    assert [(c.at, c.text, c.story, c.kind) for c in catalog.corrections] == sorted(
        ((at, text, s, kind) for s in published for at, text, kind in s.summary.corrections),
        key=lambda c: (c[0], c[2].summary.published_at, c[2].summary.id), reverse=True)
    assert catalog.held == tuple(sorted(
        (s for s in content_with(edits).stories if not clock.publishes(s.summary.published_at)),
        key=lambda s: (s.summary.published_at, s.summary.id)))


INSTANTS = st.integers(0, 6).map(lambda h: START + timedelta(hours=h))
OFFSETS = st.sampled_from([timedelta(0), timedelta(hours=2), timedelta(hours=-5)])


@settings(max_examples=300, deadline=None)
@given(stories=st.lists(st.tuples(INSTANTS, st.one_of(st.none(), INSTANTS), OFFSETS),
                        max_size=12),
       start=st.integers(0, 12), length=st.integers(0, 12))
def test_a_page_s_newest_story_is_found_from_its_corrected_ones(
        stories: list[tuple[datetime, datetime | None, timedelta]], start: int,
        length: int) -> None:
    """newest_in gives newest()'s very value (its offset too, among equal instants)
    looking at the corrected stories and one other, whatever their corrections' times."""
    made = []
    for published, correction, offset in sorted(stories, key=lambda s: s[0], reverse=True):
        zone = timezone(offset)
        published = published.astimezone(zone)
        # A correction's time may even come before the publication.
        modified = published if correction is None else correction.astimezone(zone)
        made.append(SimpleNamespace(summary=SimpleNamespace(published_at=published,
                                                            modified_at=modified)))
    corrected = corrected_places(made)  # type: ignore[arg-type]
    end = min(len(made), start + length)
    expected = newest(made[start:end])  # type: ignore[arg-type]
    assert newest_in(made, corrected, start, end) is expected  # type: ignore[arg-type]
