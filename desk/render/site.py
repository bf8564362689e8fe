"""The page registry: every kind of page around the stories, in one ordered list.

A new kind of page is one entry here (its units, its sitemap entries and the kinds of
lists of stories it renders, PageKind.lists); the sitemap, the build's work sharing and
the writer follow. A new kind of list of stories is also one entry of
desk.render.since.LIST_KINDS: a change to a story then touches its pages of the list.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import partial
from itertools import groupby

from desk import urls
from desk.content.digests import digest_all
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.render.content_pages import page_sitemap, page_units, publisher_units
from desk.render.context import RenderContext, Unit, Units
from desk.render.corrections import corrections_sitemap, corrections_units
from desk.render.feeds import feed_units
from desk.render.images import image_units
from desk.render.lifecycle import history_units, notice_units, redirect_units
from desk.render.llms import llms_units
from desk.render.members import (
    agent_lists,
    agents_sitemap,
    agents_units,
    beat_lists,
    member_sitemap,
    member_units,
)
from desk.render.pages import PAGE_KINDS, PageKind
from desk.render.schemas import schema_units
from desk.render.since import AGENT, BEAT
from desk.render.sitemaps import (
    PartPages,
    SitemapEntry,
    SitemapPart,
    render_news_sitemap,
    sitemap_index,
    sitemap_parts,
    urlset,
)

REGISTRY: tuple[PageKind, ...] = (
    *PAGE_KINDS,
    PageKind("beats", partial(member_units, beat_lists), partial(member_sitemap, beat_lists),
             lists=(BEAT,)),
    PageKind("agents", agents_units, agents_sitemap),
    PageKind("agent", partial(member_units, agent_lists),
             partial(member_sitemap, agent_lists), lists=(AGENT,)),
    PageKind("corrections", corrections_units, corrections_sitemap),
    PageKind("pages", page_units, page_sitemap),
    PageKind("publisher", publisher_units),
    PageKind("feeds", feed_units),
    PageKind("llms", llms_units),
    PageKind("schemas", schema_units),
    PageKind("redirects", redirect_units),
    PageKind("withdrawn", notice_units),
    PageKind("urls", history_units),
    PageKind("images", image_units),
)


def sitemap_pages(ctx: RenderContext) -> list[tuple[str, datetime]]:
    """Every HTML page with its last modification: the registry's, then the stories."""
    return SitemapPart.of(sitemap_entries(ctx)).pages()


def sitemap_entries(ctx: RenderContext) -> Iterator[SitemapEntry]:
    """What the sitemap lists: the registry's pages, then the stories, a month of them
    made into pages only when the sitemap's part of that month is (PartPages)."""
    for kind in REGISTRY:
        if kind.sitemap is not None:
            yield from kind.sitemap(ctx)
    # In the published order, most of a month's stories stand together: each run of one
    # month's stories is one entry.
    head = urls.SITEMAP_PART_HEAD
    for _, run in groupby(ctx.catalog.published, key=lambda item: item.url_path[:head]):
        stories = list(run)
        yield PartPages(stories[0].url_path, len(stories),
                        max(item.summary.modified_at for item in stories),
                        partial(_story_pages, stories))


def _story_pages(stories: list[LoadedStory]) -> list[tuple[str, datetime]]:
    return [(item.url_path, item.summary.modified_at) for item in stories]


def site_units(ctx: RenderContext) -> Units:
    """Every unit of the site besides the stories, the sitemaps last."""
    for kind in REGISTRY:
        yield from kind.units(ctx)
    entries = list(sitemap_entries(ctx))
    parts = sitemap_parts(entries, ctx.config.sitemap_max_urls)
    if sum(part.count for _, part in parts) > ctx.config.sitemap_max_urls:
        yield from _sitemap_parts(ctx, parts)
    else:
        pages = SitemapPart.of(entries).pages()
        yield Unit(urls.SITEMAP, (_listed(ctx, pages),),
                   lambda: [Output(urls.SITEMAP, urlset(ctx.config, pages))])
    yield Unit(urls.NEWS_SITEMAP, None, lambda: render_news_sitemap(ctx))  # on the clock


def _listed(ctx: RenderContext, pages: list[tuple[str, datetime]],
            part: str = "") -> str:
    """One digest of every page's line of the sitemap (or of one `part`), made as they
    are, so an archive's lines are never all held."""
    return digest_all(_sitemap_line(*page) for page in pages)


def _sitemap_parts(ctx: RenderContext, parts: list[tuple[str, SitemapPart]]) -> Units:
    """A large site's sitemap: each part a unit of its own, keyed by its pages' lines
    (not made for a month's stories or editions that no change touched: their lines are
    the last build's); then the index. The other pages' part changes with every story."""
    for name, part in parts:
        path = urls.sitemap_part(name)
        render = partial(_sitemap_part, ctx, path, part)
        lines = partial(_part_lines, ctx, part, name)
        listing = urls.sitemap_part_of(part.head)  # what the part lists
        if listing != urls.SITEMAP_OTHERS and ctx.unchanged(("sitemap", listing)):
            yield Unit(path, None, render, carried=lines)
        else:
            yield Unit(path, lines(), render)
    shown = [(name, part.newest()) for name, part in parts]
    yield Unit(urls.SITEMAP, tuple(f"{name} {lastmod.isoformat()}" for name, lastmod in shown),
               lambda: [Output(urls.SITEMAP, sitemap_index(ctx.config, shown))])


def _part_lines(ctx: RenderContext, part: SitemapPart, name: str) -> tuple[str, ...]:
    return (_listed(ctx, part.pages(), name),)


def _sitemap_part(ctx: RenderContext, path: str, part: SitemapPart) -> list[Output]:
    return [Output(path, urlset(ctx.config, part.pages()))]


def _sitemap_line(path: str, lastmod: datetime) -> str:
    """A page's part of the sitemap's inputs."""
    return f"{path} {lastmod.isoformat()}"
