"""sitemap.xml (all pages; an index of parts past the limit, 50,000 URLs) and news-sitemap.xml
(Google News: stories of the two days before `now`, at most 1,000)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import chain
from typing import TypeAlias
from xml.sax.saxutils import escape

from desk import urls
from desk.config import Config
from desk.content.catalog import Catalog
from desk.content.prose import clean_text
from desk.render import Output
from desk.render.context import RenderContext
from desk.render.templates import isotime, utc_time

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
MAX_NEWS = 1_000
_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n'


def render_news_sitemap(ctx: RenderContext) -> list[Output]:
    """news-sitemap.xml."""
    news = news_sitemap(ctx.catalog, ctx.config, ctx.now)
    return [Output(urls.NEWS_SITEMAP, news.encode("utf-8"))]


@dataclass(frozen=True)
class PartPages:
    """Pages that one part of a large site's sitemap lists together (a month's editions,
    a month's stories), made into (path, last modification) pairs only when that part is
    keyed or rendered: an hour touches a month or two of an archive's fifty, and making
    the pairs of every page was a tenth of a second at 100,000 stories."""

    head: str  # the path of one of them: what names their part
    count: int
    newest: datetime  # their latest modification, the first of equal instants (max)
    made: Callable[[], list[tuple[str, datetime]]]


# What a kind of page lists in the sitemap: a page with its last modification, or
# pages of one part made when asked.
SitemapEntry: TypeAlias = "tuple[str, datetime] | PartPages"


class SitemapPart:
    """What one part of a sitemap lists, in the order given: pages and PartPages."""

    def __init__(self) -> None:
        self.pieces: list[tuple[str, datetime] | PartPages] = []
        self.count = 0

    def add(self, entry: SitemapEntry) -> None:
        self.pieces.append(entry)
        self.count += entry.count if isinstance(entry, PartPages) else 1

    @property
    def head(self) -> str:
        """The path of its first page (what names the part)."""
        return _head(self.pieces[0])

    def pages(self) -> list[tuple[str, datetime]]:
        """Its pages, each (path, last modification), in order."""
        return list(chain.from_iterable(
            piece.made() if isinstance(piece, PartPages) else (piece,) for piece in self.pieces))

    def newest(self) -> datetime:
        """The latest modification of its pages: the very value max() gives over them."""
        return max(piece.newest if isinstance(piece, PartPages) else piece[1]
                   for piece in self.pieces)

    @classmethod
    def of(cls, entries: Iterable[SitemapEntry]) -> SitemapPart:
        """A part listing these, in this order."""
        part = cls()
        for entry in entries:
            part.add(entry)
        return part


def _head(entry: SitemapEntry) -> str:
    """The path of a page, or of one of some PartPages: what names its part."""
    return entry.head if isinstance(entry, PartPages) else entry[0]


def sitemap_parts(entries: Iterable[SitemapEntry], max_urls: int
                  ) -> list[tuple[str, SitemapPart]]:
    """The parts of a sitemap past the limit, by name, in name order: each page in the
    part `urls.sitemap_part_of` names, in the order given, a part past the limit cut into
    numbered pieces. A new story changes its month's part and the other pages', not the
    parts of earlier months, so a deploy sends those again only when they change."""
    by_name: dict[str, SitemapPart] = {}
    # A part is named by a path's first characters: asked once for each of about 50
    # beginnings, not for each of 150,000 pages at 100,000 stories.
    names: dict[str, str] = {}
    for entry in entries:
        head = _head(entry)[:urls.SITEMAP_PART_HEAD]
        name = names.get(head)
        if name is None:
            name = names[head] = urls.sitemap_part_of(head)
        part = by_name.get(name)
        if part is None:
            part = by_name[name] = SitemapPart()
        part.add(entry)
    parts = []
    for name, part in sorted(by_name.items()):
        if part.count <= max_urls:
            parts.append((name, part))
            continue
        pages = part.pages()
        for n, start in enumerate(range(0, len(pages), max_urls), start=1):
            parts.append((f"{name}-{n}", SitemapPart.of(pages[start: start + max_urls])))
    return parts


def sitemap_index(config: Config, parts: list[tuple[str, datetime]]) -> bytes:
    """The sitemaps.org index of the parts, each (name, latest modification)."""
    index = [_HEAD, f'<sitemapindex xmlns="{SITEMAP_NS}">\n']
    for name, lastmod in parts:
        index.append(f"<sitemap><loc>{escape(urls.absolute(config, urls.sitemap_part(name)))}"
                     f"</loc><lastmod>{isotime(lastmod)}</lastmod></sitemap>\n")
    index.append("</sitemapindex>\n")
    return "".join(index).encode("utf-8")


def urlset(config: Config, pages: list[tuple[str, datetime]]) -> bytes:
    """A sitemaps.org urlset of (site path, last modification) pairs, written line by
    line: an archive's lines are never all held at once."""
    out = io.BytesIO()
    out.write(f'{_HEAD}<urlset xmlns="{SITEMAP_NS}">\n'.encode())
    for path, lastmod in pages:
        out.write(f"<url><loc>{escape(urls.absolute(config, path))}</loc>"
                  f"<lastmod>{utc_time(lastmod)}</lastmod></url>\n".encode())
    out.write(b"</urlset>\n")
    return out.getvalue()


def news_sitemap(catalog: Catalog, config: Config, now: datetime) -> str:
    """Google News sitemap: stories first published in the window before `now`."""
    since = now - timedelta(hours=config.news_window_hours)
    recent = [s for s in catalog.published if since <= s.summary.published_at <= now][:MAX_NEWS]
    name = escape(config.site_name)
    lines = [_HEAD, f'<urlset xmlns="{SITEMAP_NS}" xmlns:news="{NEWS_NS}">\n']
    for item in recent:
        story = item.summary
        lines.append(
            f"<url><loc>{escape(urls.absolute(config, item.url_path))}</loc>"
            f"<news:news><news:publication><news:name>{name}</news:name>"
            f"<news:language>{escape(config.language)}</news:language></news:publication>"
            f"<news:publication_date>{isotime(story.published_at)}</news:publication_date>"
            f"<news:title>{escape(clean_text(story.headline))}</news:title></news:news></url>\n"
        )
    lines.append("</urlset>\n")
    return "".join(lines)
