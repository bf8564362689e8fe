"""The pages around the stories: front, newsroom, edition and archive pages, reuse terms,
404 and robots.txt, each HTML page with an index.json listing. Feeds, sitemaps and llms
files come from their own modules; this module puts them all in order.

List pages depend only on story metadata (and each story's index.json digest), never on
rendered story bodies.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jinja2 import Environment

from desk import urls
from desk.cache import Ledger, digest, memo_digest
from desk.catalog import Catalog, Group, paginate
from desk.checks import REUSE_FIELDS
from desk.config import Config
from desk.loader import LoadedStory
from desk.prose import Prose
from desk.render import Output
from desk.render.feeds import Entry, render_feeds
from desk.render.json import encode
from desk.render.llms import render_llms
from desk.render.sitemaps import render_sitemaps
from desk.render.templates import Alternate, Crumb, PageMeta, SiteContext, isotime


@dataclass(frozen=True)
class Card:
    """A story as a list shows it."""

    id: str
    headline: str
    dek: str
    angle: str
    href: str
    url: str
    published_at: datetime
    newsroom: str
    newsroom_title: str
    newsroom_href: str
    edition: str
    edition_href: str
    trust: str
    trust_text: str
    digest: str

    def as_json(self) -> dict[str, Any]:
        """The listing entry of index.json."""
        return {
            "id": self.id,
            "headline": self.headline,
            "dek": self.dek,
            "url": self.url,
            "published_at": isotime(self.published_at),
            "newsroom": self.newsroom,
            "edition": self.edition,
            "trust": self.trust,
            "sha256": self.digest,
        }


@dataclass(frozen=True)
class CardGroup:
    title: str
    href: str
    cards: tuple[Card, ...]


@dataclass(frozen=True)
class Pager:
    page: int
    pages: int
    prev_href: str | None
    next_href: str | None
    prev_url: str | None
    next_url: str | None


@dataclass(frozen=True)
class Pages:
    """What the page builders share for one build."""

    catalog: Catalog
    config: Config
    env: Environment
    site: SiteContext
    digests: dict[str, str]
    ledger: Ledger
    base: str
    keys: dict[str, str]
    memo: dict[tuple[str, ...], str] | None = None

    def href(self, path: str) -> str:
        return urls.href(self.config, path)

    def absolute(self, path: str) -> str:
        return urls.absolute(self.config, path)

    def card(self, item: LoadedStory) -> Card:
        story = item.summary
        path = item.url_path
        return Card(
            id=story.id,
            headline=story.headline,
            dek=story.dek,
            angle=story.angle,
            href=self.href(path),
            url=self.absolute(path),
            published_at=story.published_at,
            newsroom=story.newsroom,
            newsroom_title=self.catalog.newsroom(story.newsroom).title,
            newsroom_href=self.href(urls.newsroom_path(story.newsroom)),
            edition=story.edition,
            edition_href=self.href(urls.edition_path(story.edition)),
            trust=story.trust,
            trust_text=story.trust_text or story.trust,
            digest=self.digests.get(path, ""),
        )

    def by_newsroom(self, stories: Sequence[LoadedStory]) -> tuple[CardGroup, ...]:
        groups: dict[str, list[LoadedStory]] = {}
        for item in stories:
            groups.setdefault(item.summary.newsroom, []).append(item)
        return tuple(
            CardGroup(self.catalog.newsroom(key).title,
                      self.href(urls.newsroom_path(key)),
                      tuple(self.card(s) for s in items))
            for key, items in sorted(groups.items())
        )

    def page(self, path: str, template: str, meta: PageMeta, listing: dict[str, Any],
             **context: Any) -> Iterator[Output]:
        """A list page and its index.json; linked from the last build when unchanged."""
        data = encode(listing)
        # Everything the page shows is in its meta, its context and its listing.
        key = digest(self.base, path, template, repr(meta), repr(sorted(context.items())), data)
        if self.ledger.reuse(path, key) is None:
            yield from self.render(path, key, template, meta, data, **context)

    def members_key(self, path: str, template: str, stories: Sequence[LoadedStory],
                    *extra: str) -> str:
        """A cheap key for a page that shows only its member stories (and `extra`):
        each story's own key covers everything of the story a page can show, its
        newsroom's title included."""
        keys = self.keys
        return memo_digest(self.memo, self.base, path, template, *extra,
                           *(keys.get(s.url_path, s.digest) for s in stories))

    def render(self, path: str, key: str, template: str, meta: PageMeta, data: bytes,
               **context: Any) -> Iterator[Output]:
        """Render a page and record it under key."""
        html = self.env.get_template(template).render(page=meta, site=self.site, **context)
        outputs = [Output(path, html.encode("utf-8")), Output(path + "index.json", data)]
        self.ledger.record(path, key, outputs)
        yield from outputs

    def crumbs(self, *trail: tuple[str, str]) -> tuple[Crumb, ...]:
        home = Crumb(self.config.title, self.href(urls.HOME))
        return (home, *(Crumb(title, self.href(path) if path else "") for title, path in trail))


def listing(title: str, url: str, cards: Sequence[Card], pager: Pager | None = None,
            **extra: Any) -> dict[str, Any]:
    """The index.json of a list page."""
    data: dict[str, Any] = {"title": title, "url": url}
    if pager is not None:
        data.update(page=pager.page, pages=pager.pages, prev=pager.prev_url,
                    next=pager.next_url)
    data.update(extra)
    data["stories"] = [c.as_json() for c in cards]
    return data


def render_site_pages(
    catalog: Catalog,
    config: Config,
    env: Environment,
    site: SiteContext,
    prose: Prose,
    now: datetime,
    digests: dict[str, str],
    latest_markdown: dict[str, bytes],
    ledger: Ledger,
    base: str,
    keys: dict[str, str] | None = None,
    feed_memory: dict[str, Entry] | None = None,
    memo: dict[tuple[str, ...], str] | None = None,
) -> Iterator[Output]:
    """Every file of the site besides the story files (`memo`: see cache.memo_digest)."""
    pages = Pages(catalog, config, env, site, digests, ledger, base, keys or {}, memo)
    yield from front_page(pages)
    yield from newsrooms_index(pages)
    for group in catalog.newsrooms:
        yield from newsroom_pages(pages, group)
    yield from editions_index(pages)
    for group in catalog.editions:
        yield from edition_page(pages, group)
    yield from reuse_pages(pages)
    yield from search_page(pages)
    yield from not_found_page(pages)
    yield Output(urls.ROBOTS, robots_txt(config).encode("utf-8"))
    yield from render_feeds(catalog, config, env, prose, now, keys, feed_memory, ledger, base)
    yield from render_sitemaps(catalog, config, now)
    yield from render_llms(catalog, config, latest_markdown)


# The front page: the latest edition, then the newest stories of every newsroom not
# already in it, and the editions before it.
FRONT_STORIES_PER_NEWSROOM = 4
FRONT_EDITIONS = 6


def front_page(pages: Pages) -> Iterator[Output]:
    """/: leads with the latest edition, then each newsroom's newest other stories and
    the recent editions, in HTML and in its index.json."""
    catalog, config = pages.catalog, pages.config
    latest = catalog.latest_edition
    stories = latest.stories if latest else ()
    groups = pages.by_newsroom(stories)
    cards = [c for g in groups for c in g.cards]  # in the order the page shows them
    shown = {s.url_path for s in stories}
    newest = tuple(
        CardGroup(g.title, pages.href(urls.newsroom_path(g.key)), tuple(
            pages.card(s) for s in [s for s in g.stories if s.url_path not in shown]
            [:FRONT_STORIES_PER_NEWSROOM]))
        for g in catalog.newsrooms)
    editions = [(g.key, pages.href(urls.edition_path(g.key)), len(g.stories))
                for g in catalog.editions[1: 1 + FRONT_EDITIONS]]
    meta = PageMeta(title=config.title, description=config.description,
                    canonical=pages.absolute(urls.HOME))
    newsrooms = [(g.title, pages.href(urls.newsroom_path(g.key)), len(g.stories))
                 for g in catalog.newsrooms]
    data = listing(
        config.title, pages.absolute(urls.HOME), cards,
        edition=latest.key if latest else None,
        newsrooms=[{"newsroom": g.key, "title": g.title,
                    "url": pages.absolute(urls.newsroom_path(g.key)),
                    "stories": [c.as_json() for c in group.cards]}
                   for g, group in zip(catalog.newsrooms, newest, strict=True)],
        editions=[{"edition": key, "stories": count,
                   "url": pages.absolute(urls.edition_path(key))}
                  for key, _, count in editions])
    yield from pages.page(
        urls.HOME, "front.html", meta, data,
        edition=latest.key if latest else "",
        edition_href=pages.href(urls.edition_path(latest.key)) if latest else "",
        groups=groups,
        newest=tuple(g for g in newest if g.cards),
        editions=editions,
        newsrooms=newsrooms,
    )


def newsrooms_index(pages: Pages) -> Iterator[Output]:
    catalog = pages.catalog
    rows = [(g.title, pages.href(urls.newsroom_path(g.key)), len(g.stories))
            for g in catalog.newsrooms]
    title = "Newsrooms"
    meta = PageMeta(title=f"{title} · {pages.config.title}",
                    description=f"Every newsroom of {pages.config.title}.",
                    canonical=pages.absolute(urls.NEWSROOMS),
                    breadcrumbs=pages.crumbs((title, "")))
    data = {
        "title": title,
        "url": pages.absolute(urls.NEWSROOMS),
        "newsrooms": [
            {"newsroom": g.key, "title": g.title, "stories": len(g.stories),
             "url": pages.absolute(urls.newsroom_path(g.key))}
            for g in catalog.newsrooms
        ],
    }
    html = pages.env.get_template("newsrooms.html").render(page=meta, site=pages.site, rows=rows)
    yield Output(urls.NEWSROOMS, html.encode("utf-8"))
    yield Output(urls.NEWSROOMS + "index.json", encode(data))


def make_pager(pages: Pages, path_of: Any, page: int, total: int) -> Pager:
    prev_path = path_of(page - 1) if page > 1 else None
    next_path = path_of(page + 1) if page < total else None
    return Pager(
        page=page,
        pages=total,
        prev_href=pages.href(prev_path) if prev_path else None,
        next_href=pages.href(next_path) if next_path else None,
        prev_url=pages.absolute(prev_path) if prev_path else None,
        next_url=pages.absolute(next_path) if next_path else None,
    )


def newsroom_pages(pages: Pages, group: Group) -> Iterator[Output]:
    size = pages.config.page_size
    total = paginate(len(group.stories), size)

    def path_of(n: int) -> str:
        return urls.newsroom_path(group.key, n)

    for n in range(1, total + 1):
        chunk = group.stories[(n - 1) * size: n * size]
        key = pages.members_key(path_of(n), "newsroom.html", chunk, group.title, f"{n}/{total}")
        if pages.ledger.reuse(path_of(n), key) is not None:
            continue
        cards = [pages.card(s) for s in chunk]
        pager = make_pager(pages, path_of, n, total)
        suffix = f" · page {n}" if n > 1 else ""
        meta = PageMeta(
            title=f"{group.title}{suffix} · {pages.config.title}",
            description=f"Stories from the {group.title} newsroom of {pages.config.title}.",
            canonical=pages.absolute(path_of(n)),
            alternates=tuple(_feed_alternates(pages, group)),
            breadcrumbs=pages.crumbs(("Newsrooms", urls.NEWSROOMS), (group.title, "")),
        )
        yield from pages.render(
            path_of(n), key, "newsroom.html", meta,
            encode(listing(group.title, pages.absolute(path_of(n)), cards, pager,
                           newsroom=group.key)),
            title=group.title, cards=cards, pager=pager,
            feed_href=pages.href(urls.feed_path(urls.FEED_RSS, group.key)),
        )


def _feed_alternates(pages: Pages, group: Group) -> Iterator[Alternate]:
    for kind, mime, label in (
        (urls.FEED_RSS, "application/rss+xml", "RSS"),
        (urls.FEED_ATOM, "application/atom+xml", "Atom"),
        (urls.FEED_JSON, "application/feed+json", "JSON Feed"),
    ):
        yield Alternate(mime, pages.href(urls.feed_path(kind, group.key)),
                        f"{group.title} ({label})")


def editions_index(pages: Pages) -> Iterator[Output]:
    editions = pages.catalog.editions
    size = pages.config.page_size
    total = paginate(len(editions), size)
    for n in range(1, total + 1):
        chunk = editions[(n - 1) * size: n * size]
        rows = [(g.key, pages.href(urls.edition_path(g.key)), len(g.stories)) for g in chunk]
        pager = make_pager(pages, urls.editions_index_path, n, total)
        path = urls.editions_index_path(n)
        suffix = f" · page {n}" if n > 1 else ""
        meta = PageMeta(title=f"Editions{suffix} · {pages.config.title}",
                        description=f"Every edition of {pages.config.title}, newest first.",
                        canonical=pages.absolute(path),
                        breadcrumbs=pages.crumbs(("Editions", "")))
        data = {
            "title": "Editions",
            "url": pages.absolute(path),
            "page": n, "pages": total, "prev": pager.prev_url, "next": pager.next_url,
            "editions": [
                {"edition": g.key, "stories": len(g.stories),
                 "url": pages.absolute(urls.edition_path(g.key))}
                for g in chunk
            ],
        }
        yield from pages.page(path, "editions.html", meta, data, rows=rows, pager=pager)


def edition_page(pages: Pages, group: Group) -> Iterator[Output]:
    older, newer = pages.catalog.neighbours(group.key)
    path = urls.edition_path(group.key)
    key = pages.members_key(path, "edition.html", group.stories,
                            older.key if older else "", newer.key if newer else "")
    if pages.ledger.reuse(path, key) is not None:
        return
    groups = pages.by_newsroom(group.stories)
    cards = [c for g in groups for c in g.cards]  # in the order the page shows them
    meta = PageMeta(title=f"Edition {group.key} · {pages.config.title}",
                    description=f"The {group.key}:00 UTC edition of {pages.config.title}.",
                    canonical=pages.absolute(path),
                    breadcrumbs=pages.crumbs(("Editions", urls.EDITIONS), (group.key, "")))

    def link(g: Group | None) -> tuple[str, str] | None:
        return (g.key, pages.href(urls.edition_path(g.key))) if g else None

    yield from pages.render(
        path, key, "edition.html", meta,
        encode(listing(f"Edition {group.key}", pages.absolute(path), cards,
                       edition=group.key,
                       previous=pages.absolute(urls.edition_path(older.key)) if older else None,
                       next=pages.absolute(urls.edition_path(newer.key)) if newer else None)),
        edition=group.key, groups=groups,
        older=link(older), newer=link(newer),
    )


def site_reuse(config: Config) -> dict[str, Any]:
    """The site's reuse terms in machine form (/.well-known/reuse.json)."""
    data: dict[str, Any] = {k: config.reuse[k] for k in REUSE_FIELDS if k in config.reuse}
    data.update({k: v for k, v in config.reuse.items() if k not in data})
    data["license_url"] = urls.absolute(config, urls.REUSE_TERMS)
    data["machine_url"] = urls.absolute(config, urls.REUSE_JSON)
    return data


def reuse_pages(pages: Pages) -> Iterator[Output]:
    config = pages.config
    reuse = site_reuse(config)
    meta = PageMeta(title=f"Reuse terms · {config.title}",
                    description=reuse.get("summary", ""),
                    canonical=pages.absolute(urls.REUSE_TERMS),
                    breadcrumbs=pages.crumbs(("Reuse terms", "")))
    html = pages.env.get_template("reuse.html").render(page=meta, site=pages.site, reuse=reuse)
    yield Output(urls.REUSE_TERMS, html.encode("utf-8"))
    yield Output(urls.REUSE_JSON, encode(reuse))


def search_page(pages: Pages) -> Iterator[Output]:
    """/search/: Pagefind's interface over the story index (when search is on)."""
    if not pages.config.search:
        return
    meta = PageMeta(title=f"Search · {pages.config.title}",
                    description=f"Search every story of {pages.config.title}.",
                    canonical=pages.absolute(urls.SEARCH),
                    breadcrumbs=pages.crumbs(("Search", "")))
    html = pages.env.get_template("search.html").render(
        page=meta, site=pages.site,
        pagefind_css=pages.href(urls.PAGEFIND + "pagefind-ui.css"),
        pagefind_js=pages.href(urls.PAGEFIND + "pagefind-ui.js"),
        pagefind_path=pages.href(urls.PAGEFIND))
    yield Output(urls.SEARCH, html.encode("utf-8"))


def not_found_page(pages: Pages) -> Iterator[Output]:
    meta = PageMeta(title=f"Page not found · {pages.config.title}", description="",
                    canonical=pages.absolute(urls.NOT_FOUND))
    html = pages.env.get_template("404.html").render(page=meta, site=pages.site)
    yield Output(urls.NOT_FOUND, html.encode("utf-8"))


def robots_txt(config: Config) -> str:
    """robots.txt: allow all, and name both sitemaps."""
    return (
        "User-agent: *\nAllow: /\n\n"
        f"Sitemap: {urls.absolute(config, urls.SITEMAP)}\n"
        f"Sitemap: {urls.absolute(config, urls.NEWS_SITEMAP)}\n"
    )
