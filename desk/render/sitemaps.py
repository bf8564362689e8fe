"""sitemap.xml (all pages; an index of parts past the limit, 50,000 URLs) and news-sitemap.xml
(Google News: stories of the two days before `now`, at most 1,000)."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
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


def sitemap_parts(pages: list[tuple[str, datetime]], max_urls: int
                  ) -> list[tuple[str, list[tuple[str, datetime]]]]:
    """The parts of a sitemap past the limit, by name, in name order: each page in the
    part `urls.sitemap_part_of` names, in the order given, a part past the limit cut into numbered
    pieces. A new story changes its month's part and the other pages', not the parts
    of earlier months, so a deploy sends those again only when they change."""
    by_name: dict[str, list[tuple[str, datetime]]] = {}
    # A part is named by a path's first characters: asked once for each of about 50
    # beginnings, not for each of 150,000 pages at 100,000 stories.
    names: dict[str, str] = {}
    for page in pages:
        head = page[0][:urls.SITEMAP_PART_HEAD]
        name = names.get(head)
        if name is None:
            name = names[head] = urls.sitemap_part_of(head)
        by_name.setdefault(name, []).append(page)
    parts = []
    for name, part in sorted(by_name.items()):
        if len(part) <= max_urls:
            parts.append((name, part))
            continue
        for n, start in enumerate(range(0, len(part), max_urls), start=1):
            parts.append((f"{name}-{n}", part[start: start + max_urls]))
    return parts


def newest(pages: list[tuple[str, datetime]]) -> datetime:
    """The latest modification of some pages."""
    return max(lastmod for _, lastmod in pages)


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
