"""The newsroom's own pages (About, policies...): each as index.html, index.md and
index.json at its URL; and /.well-known/publisher.json, the publisher with its policies.

A page's files depend only on its file and the site values (its navigation and policies
are in the site key), so an edit to one page renders that page alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from desk import urls
from desk.content.pages import Page
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode
from desk.render.meta import publisher_document
from desk.render.templates import Alternate, Crumb, PageMeta


def page_units(ctx: RenderContext) -> Units:
    """One unit per page of the content."""
    for page in ctx.catalog.pages:
        inputs = (page.path, "page.html", "page.md.jinja", page.digest, page.file)
        yield Unit(page.path, inputs, _page(ctx, page))


def _page(ctx: RenderContext, page: Page) -> Callable[[], list[Output]]:
    return lambda: render_page(ctx, page)


def render_page(ctx: RenderContext, page: Page) -> list[Output]:
    """A page's three files."""
    config = ctx.config
    url = urls.absolute(config, page.path)
    meta = PageMeta(
        title=f"{page.title} · {config.title}", description=page.description, canonical=url,
        alternates=(Alternate("text/markdown", urls.href(config, page.path + "index.md"),
                              "Markdown"),
                    Alternate("application/json", urls.href(config, page.path + "index.json"),
                              "JSON")),
        breadcrumbs=(Crumb(config.title, urls.href(config, urls.HOME)), Crumb(page.title, "")))
    values = {"page": meta, "site": ctx.site, "doc": page, "url": url}
    html = ctx.env.get_template("page.html").render(body=ctx.prose.block(page.body), **values)
    markdown = ctx.env.get_template("page.md.jinja").render(**values)
    data: dict[str, object] = {"type": "page", "title": page.title,
                               "description": page.description, "url": url}
    if page.policy is not None:
        data["policy"] = page.policy
    data["markdown"] = page.body
    return [Output(page.path, html.encode("utf-8")),
            Output(page.path + "index.md", markdown.encode("utf-8")),
            Output(page.path + "index.json", encode(data))]


def page_sitemap(ctx: RenderContext) -> Iterator[tuple[str, datetime]]:
    """Each page, dated by the site's latest change (a page's file carries no date)."""
    for page in ctx.catalog.pages:
        yield page.path, ctx.catalog.last_modified


def publisher_units(ctx: RenderContext) -> Units:
    """/.well-known/publisher.json (one small file: rendered on every build)."""
    yield Unit(urls.PUBLISHER_JSON, None, lambda: [Output(
        urls.PUBLISHER_JSON, encode(publisher_document(ctx.config, ctx.site.policies)))])
