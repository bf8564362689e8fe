"""The list pages of a beat (/n/NEWSROOM/beats/BEAT/) and of a writing agent
(/agents/AGENT/): their stories newest first, in stable archive pages exactly as the
newsroom lists have them, so an hourly build renders one or two pages of each touched."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from desk import urls
from desk.content.catalog import Slice, page_newest, stable_pages
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode
from desk.render.pages import (
    SitemapEntries,
    card,
    crumbs,
    feed_alternates,
    href,
    listing,
    markdown_page,
    members_inputs,
    pager,
    place,
    stable_unit,
    stable_units,
    title_suffix,
)
from desk.render.since import AGENT, BEAT
from desk.render.templates import PageMeta

TEMPLATE = "members.html"


@dataclass(frozen=True)
class Members:
    """One list of member stories: what its pages show and where they are."""

    name: tuple[str, str]  # what a long-running process keeps its pages' inputs under
    title: str
    intro: str
    trail: tuple[tuple[str, str], ...]  # breadcrumbs between home and the list
    stories: tuple[LoadedStory, ...]
    path_of: Callable[[int], str]
    feed: bool  # has RSS, Atom and JSON Feed in its folder
    runs: bool  # shows each story's run id
    extra: tuple[tuple[str, str], ...]  # index.json's keys that name the list
    corrected: Sequence[int]  # the places of its corrected stories (catalog.newest_in)


def beat_lists(ctx: RenderContext) -> Iterator[Members]:
    for beat in ctx.catalog.beats:
        room = ctx.catalog.newsroom(beat.newsroom)
        yield Members(BEAT.group(f"{beat.newsroom}/{beat.key}"), beat.title,
                      f"Stories of the {beat.title} beat of the {room.title} newsroom.",
                      (("Newsrooms", urls.NEWSROOMS),
                       (room.title, urls.newsroom_path(room.key))),
                      beat.stories, partial(urls.beat_path, beat.newsroom, beat.key), True,
                      False, (("newsroom", beat.newsroom), ("beat", beat.key)), beat.corrected)


def agent_lists(ctx: RenderContext) -> Iterator[Members]:
    for group in ctx.catalog.agents:
        yield Members(AGENT.group(group.key), group.title,
                      f"Stories written by the agent {group.title} for {ctx.config.title}, "
                      "with the run that wrote each.",
                      (("Agents", urls.AGENTS),), group.stories,
                      partial(urls.agent_path, group.key), False, True, (("agent", group.key),),
                      group.corrected)


def member_units(lists: Callable[[RenderContext], Iterator[Members]], ctx: RenderContext
                 ) -> Units:
    """Each page of each list, keyed by its member stories and its place."""
    for members in lists(ctx):
        settled = ctx.settled(members.name, members.stories)
        if settled is not None:
            yield from stable_units(members.stories, ctx.config.page_size, members.path_of,
                                    settled, partial(_stable_unit, ctx, members, settled))
            continue
        for page, inputs in _inputs(ctx, members):
            yield Unit(page.path, inputs, partial(_render, ctx, members, page))


def _stable_unit(ctx: RenderContext, members: Members, settled: Callable[[int], bool],
                 page: Slice[LoadedStory]) -> Unit:
    return stable_unit(page, settled, partial(_render, ctx, members, page),
                       partial(_page_inputs, ctx, members, page))


def member_sitemap(lists: Callable[[RenderContext], Iterator[Members]], ctx: RenderContext
                   ) -> SitemapEntries:
    for members in lists(ctx):
        for page in _slices(ctx, members):
            yield page.path, page_newest(members.stories, members.corrected, page)


def _slices(ctx: RenderContext, members: Members) -> Iterator[Slice[LoadedStory]]:
    return stable_pages(members.stories, ctx.config.page_size, members.path_of)


def _inputs(ctx: RenderContext, members: Members
            ) -> list[tuple[Slice[LoadedStory], tuple[str, ...]]]:
    return [(page, _page_inputs(ctx, members, page)) for page in _slices(ctx, members)]


def _page_inputs(ctx: RenderContext, members: Members, page: Slice[LoadedStory]
                 ) -> tuple[str, ...]:
    return members_inputs(ctx, page.path, TEMPLATE, page.items, members.title,
                          members.intro, *place(page))


def _render(ctx: RenderContext, members: Members, page: Slice[LoadedStory]
            ) -> list[Output]:
    cards = [card(ctx, s) for s in page.items]
    notes = _notes(page.items) if members.runs else [""] * len(cards)
    links = pager(ctx, page)
    first = members.path_of(0)
    meta = PageMeta(
        title=f"{members.title}{title_suffix(page)} · {ctx.config.title}",
        description=members.intro, canonical=urls.absolute(ctx.config, page.path),
        alternates=tuple(feed_alternates(ctx, first, members.title)) if members.feed else (),
        breadcrumbs=crumbs(ctx, *members.trail, (members.title, "")))
    data = listing(members.title, urls.absolute(ctx.config, page.path), cards, links,
                   **dict(members.extra))
    if members.runs:
        for entry, item in zip(data["stories"], page.items, strict=True):
            entry["run_id"] = item.summary.run_id
    feed = href(ctx, urls.feed_in(first, urls.FEED_RSS)) if members.feed else ""
    return markdown_page(ctx, page.path, TEMPLATE, meta, encode(data), title=members.title,
                     intro=members.intro, cards=cards, notes=notes, pager=links,
                     feed_href=feed)


def _notes(items: Sequence[LoadedStory]) -> list[str]:
    return [f"Run {run}" if (run := item.summary.run_id) else "" for item in items]


def agents_units(ctx: RenderContext) -> Units:
    """/agents/: every writing agent (rendered on every build: one small page)."""
    yield Unit(urls.AGENTS, None, lambda: agents_index(ctx))


def agents_index(ctx: RenderContext) -> list[Output]:
    groups = ctx.catalog.agents
    title = "Agents"
    meta = PageMeta(title=f"{title} · {ctx.config.title}",
                    description=f"The agents that write the stories of {ctx.config.title}.",
                    canonical=urls.absolute(ctx.config, urls.AGENTS),
                    breadcrumbs=crumbs(ctx, (title, "")))
    data = {"title": title, "url": urls.absolute(ctx.config, urls.AGENTS),
            "agents": [{"agent": g.key, "stories": len(g.stories),
                        "url": urls.absolute(ctx.config, urls.agent_path(g.key))}
                       for g in groups]}
    rows = [(g.title, href(ctx, urls.agent_path(g.key)), len(g.stories)) for g in groups]
    links = [(g.title, urls.absolute(ctx.config, urls.agent_path(g.key)), len(g.stories))
             for g in groups]
    return markdown_page(ctx, urls.AGENTS, "directory.html", meta, encode(data),
                         heading=title, rows=rows, links=links)


def agents_sitemap(ctx: RenderContext) -> SitemapEntries:
    if ctx.catalog.agents:
        yield urls.AGENTS, ctx.catalog.last_modified
