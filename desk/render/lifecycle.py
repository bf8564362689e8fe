"""What a story leaves behind when it moves or is withdrawn: a redirect page at each old
URL of a moved story, a withdrawal notice (HTML, Markdown and JSON) at a withdrawn
story's URL, and the URL history they come from, /.well-known/desk-urls.json.

None of these pages is in the sitemap, a list, a feed, the llms files or the search
index: redirects and notices carry `noindex`, and no `data-pagefind-body`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from desk import urls
from desk.config import Config
from desk.content.catalog import Notice
from desk.content.history import Redirect, site_file
from desk.content.models import SCHEMA
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode
from desk.render.pages import absolute, crumbs, href
from desk.render.templates import Alternate, PageMeta, isotime


def redirect_units(ctx: RenderContext) -> Units:
    """One page at each old URL of a moved story, sending readers to its page."""
    for moved in ctx.catalog.redirects:
        yield Unit(moved.path, ("redirect", moved.path, moved.target),
                   partial(redirect_page, ctx, moved))


def redirect_page(ctx: RenderContext, moved: Redirect) -> list[Output]:
    """A redirect page: a meta refresh, rel=canonical to the new URL, a visible link."""
    html = ctx.env.get_template("redirect.html").render(
        site=ctx.site, href=href(ctx, moved.target), url=absolute(ctx, moved.target))
    return [Output(moved.path, html.encode("utf-8"))]


def notice_units(ctx: RenderContext) -> Units:
    """A withdrawal notice at the URL of each withdrawn story that was published."""
    for notice in ctx.catalog.notices:
        if notice.path is not None:
            inputs = ("withdrawn", notice.path, notice.id, isotime(notice.withdrawn_at),
                      notice.reason)
            yield Unit(notice.path, inputs, partial(notice_pages, ctx, notice, notice.path))


def notice_pages(ctx: RenderContext, notice: Notice, path: str) -> list[Output]:
    """The notice in the three formats of the story it replaces."""
    config = ctx.config
    json_href, markdown_href = href(ctx, path + "index.json"), href(ctx, path + "index.md")
    meta = PageMeta(
        title=f"Withdrawn story · {config.title}",
        description=f"{config.title} withdrew the story published at this address.",
        canonical=absolute(ctx, path),
        alternates=(Alternate("text/markdown", markdown_href, "Markdown"),
                    Alternate("application/json", json_href, "JSON")),
        breadcrumbs=crumbs(ctx, ("Withdrawn story", "")),
        robots="noindex",
    )
    html = ctx.env.get_template("withdrawn.html").render(
        page=meta, site=ctx.site, notice=notice, json_href=json_href,
        markdown_href=markdown_href)
    markdown = ctx.env.get_template("withdrawn.md.jinja").render(
        site=ctx.site, notice=notice, url=absolute(ctx, path))
    return [Output(path, html.encode("utf-8")),
            Output(path + "index.md", markdown.encode("utf-8")),
            Output(path + "index.json", encode(notice_json(notice, path, config)))]


def notice_json(notice: Notice, path: str, config: Config) -> dict[str, Any]:
    """The notice in machine form: what agents that cached the story's index.json find."""
    url = urls.absolute(config, path)
    return {
        "schema": SCHEMA,
        "type": "withdrawal",
        "id": notice.id,
        "url": url,
        "withdrawn_at": isotime(notice.withdrawn_at),
        "reason": notice.reason,
        "links": {"html": url, "json": url + "index.json", "markdown": url + "index.md"},
    }


def history_units(ctx: RenderContext) -> Units:
    """/.well-known/desk-urls.json (written on every build; a long-running process
    encodes it again only when the history or the redirects changed). Encoded when it
    is written: at 100,000 stories it is 7 MB, not to be held while the units before it
    are made and rendered."""
    catalog = ctx.catalog

    def render() -> list[Output]:
        return [Output(urls.URL_HISTORY,
                       encode(site_file(catalog.history, catalog.redirects, ctx.config)))]

    yield Unit(urls.URL_HISTORY, None, render)
