"""/corrections/: every change record of a published story (a correction, a clarification,
an update or an editor's note, each named as such), newest first, in stable archive pages,
with an Atom feed and a JSON Feed of the changes themselves.

A withdrawn story is not published, so its corrections leave the log; an entry links the
story where it is now, so a moved story's entry follows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from markupsafe import Markup

from desk import urls
from desk.content.catalog import Corrected, Slice, stable_pages
from desk.render import Output, changes
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode
from desk.render.pages import (
    SitemapEntries,
    crumbs,
    href,
    markdown_page,
    page_fields,
    pager,
    place,
    title_suffix,
)
from desk.render.templates import Alternate, PageMeta, isotime

TEMPLATE = "corrections.html"
DESCRIPTION = ("Every correction, clarification, update and editor's note made to a story "
               "of {site}, newest first.")
FEED_TEMPLATE = "corrections.atom.xml"


@dataclass(frozen=True)
class LogEntry:
    """One correction as the log and its feeds show it."""

    id: str
    at: datetime
    text: str
    html: Markup
    headline: str
    href: str
    url: str
    story_id: str
    kind: str = "correction"

    @property
    def label(self) -> str:
        """Its kind in words ("Clarification")."""
        return changes.label(self.kind)

    @property
    def title(self) -> str:
        """Its title in the feeds: "Clarification: HEADLINE"."""
        return f"{self.label}: {self.headline}"


@dataclass(frozen=True)
class Log:
    """The corrections feed's channel values."""

    title: str
    description: str
    url: str
    atom_url: str
    json_url: str
    updated: datetime
    entries: tuple[LogEntry, ...]


def _inputs(ctx: RenderContext, corrections: tuple[Corrected, ...]) -> tuple[str, ...]:
    """What a list of corrections shows: each story's key covers its correction's text,
    headline and URL; the date tells its corrections apart."""
    keys = ctx.story_keys([c.story for c in corrections])
    return tuple(f"{key} {isotime(c.at)}" for key, c in zip(keys, corrections, strict=True))


def corrections_units(ctx: RenderContext) -> Units:
    """The log's pages (only the latest changes when a correction is added) and its feed."""
    for page in _slices(ctx):
        inputs = (page.path, TEMPLATE, *place(page), *_inputs(ctx, tuple(page.items)))
        yield Unit(page.path, inputs, partial(_render, ctx, page))
    latest = ctx.catalog.corrections[: ctx.config.feed_size]
    feed = urls.feed_in(urls.CORRECTIONS, urls.FEED_ATOM)
    yield Unit(feed, (feed, FEED_TEMPLATE, "" if latest else isotime(ctx.now),
                      *_inputs(ctx, latest)), partial(_feeds, ctx, latest))


def corrections_sitemap(ctx: RenderContext) -> SitemapEntries:
    for page in _slices(ctx):
        yield page.path, max((c.at for c in page.items), default=ctx.catalog.last_modified)


def _slices(ctx: RenderContext) -> list[Slice[Corrected]]:
    return list(stable_pages(ctx.catalog.corrections, ctx.config.page_size,
                             urls.corrections_path))


def _entry(ctx: RenderContext, found: Corrected) -> LogEntry:
    story = found.story.summary
    return LogEntry(urls.correction_entry_id(ctx.config, story.id, isotime(found.at)),
                    found.at, found.text, ctx.prose.block(found.text), story.headline,
                    href(ctx, found.story.url_path),
                    urls.absolute(ctx.config, found.story.url_path), story.id, found.kind)


def _render(ctx: RenderContext, page: Slice[Corrected]) -> list[Output]:
    entries = [_entry(ctx, c) for c in page.items]
    links = pager(ctx, page)
    title = "Corrections"
    atom = urls.feed_in(urls.CORRECTIONS, urls.FEED_ATOM)
    meta = PageMeta(
        title=f"{title}{title_suffix(page)} · {ctx.config.title}",
        description=DESCRIPTION.format(site=ctx.config.title),
        canonical=urls.absolute(ctx.config, page.path),
        alternates=(Alternate("application/atom+xml", href(ctx, atom), "Corrections (Atom)"),
                    Alternate("application/feed+json",
                              href(ctx, urls.feed_in(urls.CORRECTIONS, urls.FEED_JSON)),
                              "Corrections (JSON Feed)")),
        breadcrumbs=crumbs(ctx, (title, "")))
    data: dict[str, Any] = {"title": title, "url": urls.absolute(ctx.config, page.path),
                            **page_fields(links),
                            "corrections": [_json(e) for e in entries]}
    return markdown_page(ctx, page.path, TEMPLATE, meta, encode(data), entries=entries,
                     pager=links, feed_href=href(ctx, atom))


def _json(entry: LogEntry) -> dict[str, Any]:
    return {"at": isotime(entry.at), "kind": entry.kind, "text": entry.text,
            "story": entry.story_id, "headline": entry.headline, "url": entry.url}


def _feeds(ctx: RenderContext, latest: tuple[Corrected, ...]) -> list[Output]:
    config = ctx.config
    entries = tuple(_entry(ctx, c) for c in latest)
    log = Log(f"Corrections · {config.title}",
              DESCRIPTION.format(site=config.title),
              urls.absolute(config, urls.CORRECTIONS),
              urls.absolute(config, urls.feed_in(urls.CORRECTIONS, urls.FEED_ATOM)),
              urls.absolute(config, urls.feed_in(urls.CORRECTIONS, urls.FEED_JSON)),
              max((e.at for e in entries), default=ctx.now), entries)
    atom = ctx.env.get_template(FEED_TEMPLATE).render(log=log, site=config)
    feed = {"version": "https://jsonfeed.org/version/1.1", "title": log.title,
            "home_page_url": log.url, "feed_url": log.json_url,
            "description": log.description, "language": config.language,
            "items": [{"id": e.id, "url": e.url, "title": e.title,
                       "content_html": str(e.html), "content_text": e.text,
                       "date_published": isotime(e.at), "tags": [e.label]}
                      for e in entries]}
    return [Output(urls.feed_in(urls.CORRECTIONS, urls.FEED_ATOM), atom.encode("utf-8")),
            Output(urls.feed_in(urls.CORRECTIONS, urls.FEED_JSON), encode(feed))]
