"""What a story leaves behind when it moves: a redirect page at each old URL, and the URL
history the redirects come from, /.well-known/desk-urls.json.

Redirect pages are in no sitemap, list, feed, llms file or search index: they carry
`noindex`, and no `data-pagefind-body`.
"""

from __future__ import annotations

from functools import partial

from desk import urls
from desk.history import Redirect, site_file
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode
from desk.render.pages import absolute, href


def redirect_units(ctx: RenderContext) -> Units:
    """One page at each old URL of a moved story, sending readers to its page."""
    for moved in ctx.catalog.redirects:
        yield Unit(moved.path, ("redirect", moved.path, moved.target),
                   partial(redirect_page, ctx, moved), recurring=True)


def redirect_page(ctx: RenderContext, moved: Redirect) -> list[Output]:
    """A redirect page: a meta refresh, rel=canonical to the new URL, a visible link."""
    html = ctx.env.get_template("redirect.html").render(
        site=ctx.site, href=href(ctx, moved.target), url=absolute(ctx, moved.target))
    return [Output(moved.path, html.encode("utf-8"))]


def history_units(ctx: RenderContext) -> Units:
    """/.well-known/desk-urls.json (small: written on every build)."""
    catalog = ctx.catalog
    yield Unit(urls.URL_HISTORY, None, lambda: [Output(urls.URL_HISTORY, encode(
        site_file(catalog.history, catalog.redirects, ctx.config)))])
