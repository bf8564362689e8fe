"""The Jinja environment and the values every page template shares."""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from types import CodeType
from typing import Any

from jinja2 import (
    BytecodeCache,
    Environment,
    StrictUndefined,
    Template,
    TemplateError,
    TemplateSyntaxError,
    select_autoescape,
)
from markupsafe import Markup, escape

from desk import urls
from desk.config import Config
from desk.content.findings import Finding
from desk.content.pages import POLICY_KINDS, Page
from desk.render.plaintext import md_code, md_fence, md_text, md_url
from desk.render.theme import template_folders, template_loader


def make_environment(config: Config, reload: bool = True,
                     compiled: BytecodeCache | None = None) -> Environment:
    """A Jinja environment over the site's templates and desk's own (HTML and XML autoescaped).

    `reload=False` for a one-off build: templates are not checked for changes at each use.
    `compiled`: where templates' compiled code is kept between processes, if anywhere.
    """
    env = Environment(
        auto_reload=reload,
        bytecode_cache=compiled,
        loader=template_loader(config.templates_dir),
        autoescape=select_autoescape(["html", "xml"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        isotime=isotime,
        humantime=humantime,
        yaml=yaml_string,
        oneline=oneline,
        append_inline=append_inline,
        md=md_text,
        md_url=md_url,
        md_code=md_code,
        md_fence=md_fence,
    )
    env.template_class = DeskTemplate
    return env


def escape_text(value: object) -> str:
    """What markupsafe's escape gives, as a plain string: the text of `{{ value }}` in
    an autoescaped template.

    A page shows a few hundred values and each became a Markup object on the way to
    being joined into the page: this is a quarter of that cost for plain text."""
    if type(value) is str:
        if "&" in value or "<" in value or ">" in value or '"' in value or "'" in value:
            return (value.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
                    .replace("'", "&#39;").replace('"', "&#34;"))
        return value
    return escape(value)


class DeskTemplate(Template):
    """A template whose autoescaped output goes through escape_text.

    Where autoescape is on, compiled template code calls the `escape` of its own module
    namespace (one per template, shared by its blocks and macros) for every value it
    outputs; constants were escaped when it was compiled."""

    @classmethod
    def from_code(cls, environment: Environment, code: CodeType,
                  globals: MutableMapping[str, Any],
                  uptodate: Callable[[], bool] | None = None) -> Template:
        template = super().from_code(environment, code, globals, uptodate)
        template.root_render_func.__globals__["escape"] = escape_text
        return template


def utc_time(value: datetime) -> str:
    """RFC 3339 in UTC with a Z: 2026-11-14T12:36:05Z (not cached: what a sitemap shows
    once for every page)."""
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


# Cached: list pages and feeds show the same stories' times again and again. The most
# recent few thousand: a cache as large as an archive would be held to the end.
@lru_cache(maxsize=1 << 12)
def isotime(value: datetime) -> str:
    """RFC 3339 in UTC with a Z, as utc_time."""
    return utc_time(value)


@lru_cache(maxsize=1 << 12)
def humantime(value: datetime) -> str:
    """A reader's date: 14 November 2026, 12:36 UTC."""
    value = value.astimezone(UTC)
    return f"{value.day} {value:%B %Y, %H:%M} UTC"


def yaml_string(value: object) -> str:
    """A YAML scalar that cannot break the front matter (JSON strings are YAML).

    <, >, &, [ and ] are written as \\u escapes: a Markdown reader that knows no front
    matter shows it as text, where they could otherwise start raw HTML, an entity or a
    link."""
    return json.dumps(str(value), ensure_ascii=False).translate(_YAML_ESCAPES)


_YAML_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&[]"})


def oneline(value: str) -> str:
    """Collapse white space so a value cannot start a new Markdown block."""
    return " ".join(value.split())


def append_inline(html: Markup, extra: str) -> Markup:
    """Put extra inline markup inside the last paragraph of a rendered block."""
    body = str.rstrip(html)  # one plain string: this runs for every paragraph
    if body.endswith("</p>"):
        return Markup(f"{body[:-4]}{extra}</p>\n")
    return Markup(f"{html}{extra}")


@dataclass(frozen=True)
class FeedLink:
    type: str
    href: str
    title: str


@dataclass(frozen=True)
class NavLink:
    title: str
    href: str


# An indexable page lets search engines show a large picture (Google Discover and Top
# Stories show large previews only with it), and snippets and video previews of any
# length: the reuse terms let anyone quote and summarise a story.
INDEXABLE = "max-image-preview:large, max-snippet:-1, max-video-preview:-1"
NOINDEX = "noindex"


@dataclass(frozen=True)
class SiteContext:
    """Values every page shows: names, navigation, assets, feeds."""

    title: str
    description: str
    language: str
    home_href: str
    newsrooms_href: str
    editions_href: str
    feed_href: str
    llms_href: str
    reuse_terms_href: str
    reuse_terms_url: str
    reuse_json_href: str
    licence_href: str  # the RSL licence file
    stylesheet: str
    script: str
    search_script: str
    og_image: str
    favicon: str
    search_href: str
    feeds: tuple[FeedLink, ...]
    # The newsroom's own pages that have a `nav` order, in that order (then by path).
    pages: tuple[NavLink, ...] = ()
    # The publisher's policies: (schema.org property, absolute URL of its page).
    policies: tuple[tuple[str, str], ...] = ()
    publisher_json_href: str = ""
    corrections_href: str = ""
    preview: bool = False  # a deploy preview: the banner and noindex on every page
    # What a page asks of search engines unless it asks for noindex: INDEXABLE, or
    # noindex on every page of a preview.
    robots: str = INDEXABLE


def site_context(config: Config, assets: dict[str, str],
                 pages: tuple[Page, ...] = ()) -> SiteContext:
    """The shared page values for one build (`pages`: the newsroom's own pages)."""
    def href(path: str) -> str:
        return urls.href(config, path)

    listed = sorted((p for p in pages if p.nav is not None), key=lambda p: (p.nav, p.path))
    by_kind = {p.policy: p.path for p in pages if p.policy is not None}

    return SiteContext(
        title=config.title,
        description=config.description,
        language=config.language,
        home_href=href(urls.HOME),
        newsrooms_href=href(urls.NEWSROOMS),
        editions_href=href(urls.EDITIONS),
        feed_href=href(urls.feed_path(urls.FEED_RSS)),
        llms_href=href(urls.LLMS),
        reuse_terms_href=href(urls.REUSE_TERMS),
        reuse_terms_url=urls.absolute(config, urls.REUSE_TERMS),
        reuse_json_href=href(urls.REUSE_JSON),
        licence_href=href(urls.LICENCE),
        stylesheet=assets.get("site.css", href("/static/site.css")),
        script=assets.get("site.js", ""),
        search_script=assets.get("search.js", ""),
        og_image=urls.absolute(config, "/static/og-default.png"),
        favicon=assets.get("favicon.svg", ""),
        search_href=href(urls.SEARCH) if config.search else "",
        feeds=(
            FeedLink("application/rss+xml", href(urls.feed_path(urls.FEED_RSS)),
                     f"{config.title} (RSS)"),
            FeedLink("application/atom+xml", href(urls.feed_path(urls.FEED_ATOM)),
                     f"{config.title} (Atom)"),
            FeedLink("application/feed+json", href(urls.feed_path(urls.FEED_JSON)),
                     f"{config.title} (JSON Feed)"),
        ),
        pages=tuple(NavLink(p.title, href(p.path)) for p in listed),
        policies=tuple((kind, urls.absolute(config, by_kind[kind]))
                       for kind in POLICY_KINDS if kind in by_kind),
        publisher_json_href=href(urls.PUBLISHER_JSON),
        corrections_href=href(urls.CORRECTIONS),
        preview=config.preview,
        robots=NOINDEX if config.preview else INDEXABLE,
    )


@dataclass(frozen=True)
class Crumb:
    title: str
    href: str


@dataclass(frozen=True)
class Alternate:
    type: str
    href: str
    title: str = ""


@dataclass(frozen=True)
class PageMeta:
    """Per-page head values."""

    title: str
    description: str
    canonical: str
    alternates: tuple[Alternate, ...] = ()
    breadcrumbs: tuple[Crumb, ...] = ()
    og: tuple[tuple[str, str], ...] = ()
    jsonld: str = ""
    robots: str = ""  # e.g. "noindex" for a draft or a withdrawal notice
    author: str = ""  # who wrote the page (a story's writing agent)


def template_finding(exc: TemplateError, templates_dir: Path) -> Finding:
    """Name the template file and line of a template error."""
    if isinstance(exc, TemplateSyntaxError):
        name = exc.filename or str(templates_dir / (exc.name or "?"))
        return Finding(name, "", "template", f"template error: {exc.message}",
                       line=exc.lineno, column=1)
    # Jinja rewrites tracebacks so that template frames carry the template's file and line.
    where: tuple[str, int] | None = None
    folders = [folder.resolve() for folder in template_folders(templates_dir)]
    for frame, line in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if any(Path(filename).resolve().is_relative_to(folder) for folder in folders):
            where = (filename, line)
    if where is None:
        return Finding(str(templates_dir), "", "template", f"template error: {exc}")
    return Finding(where[0], "", "template", f"template error: {exc}", line=where[1], column=1)
