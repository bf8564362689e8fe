"""sitemap.xml (all pages; an index of parts past 50,000 URLs) and news-sitemap.xml
(Google News: stories of the two days before `now`, at most 1,000)."""

from __future__ import annotations

import io
from collections.abc import Iterator
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
MAX_URLS = 50_000
MAX_NEWS = 1_000
_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n'


def render_sitemaps(ctx: RenderContext, pages: list[tuple[str, datetime]],
                    max_urls: int = MAX_URLS) -> list[Output]:
    """sitemap.xml (or its index and parts) over `pages` (site path, last modification),
    and news-sitemap.xml."""
    return [*render_sitemap(ctx, pages, max_urls), *render_news_sitemap(ctx)]


def render_news_sitemap(ctx: RenderContext) -> list[Output]:
    """news-sitemap.xml."""
    news = news_sitemap(ctx.catalog, ctx.config, ctx.now)
    return [Output(urls.NEWS_SITEMAP, news.encode("utf-8"))]


def render_sitemap(ctx: RenderContext, pages: list[tuple[str, datetime]],
                   max_urls: int = MAX_URLS) -> Iterator[Output]:
    """sitemap.xml (or its index and parts) over `pages` (site path, last modification),
    made one part at a time: an archive's parts are tens of MB together, and each can be
    written before the next is made."""
    config = ctx.config
    if len(pages) <= max_urls:
        yield Output(urls.SITEMAP, urlset(config, pages))
        return
    index = [_HEAD, f'<sitemapindex xmlns="{SITEMAP_NS}">\n']
    for n, start in enumerate(range(0, len(pages), max_urls), start=1):
        part = pages[start: start + max_urls]
        path = f"/sitemap-{n}.xml"
        yield Output(path, urlset(config, part))
        newest = max(lastmod for _, lastmod in part)
        index.append(f"<sitemap><loc>{escape(urls.absolute(config, path))}</loc>"
                     f"<lastmod>{isotime(newest)}</lastmod></sitemap>\n")
    index.append("</sitemapindex>\n")
    yield Output(urls.SITEMAP, "".join(index).encode("utf-8"))


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
