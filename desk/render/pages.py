"""The pages around the stories: front, newsroom, edition and archive pages, reuse terms,
search, 404 and robots.txt. Each HTML list page has an index.json listing beside it.

Every page kind offers its units (see desk.render.context.Unit), its sitemap entries and
how many list pages it renders; desk.render.site lists the kinds in order. List pages
depend only on story metadata (and each story's index.json digest), never on rendered
story bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from itertools import groupby, islice
from typing import Any

from desk import urls
from desk.config import Config
from desk.content.catalog import (
    EPOCH,
    Group,
    Slice,
    page_newest,
    page_numbers,
    stable_page,
    stable_pages,
)
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units, carried_apart
from desk.render.disclosure import CARD_WRITTEN, card_marker
from desk.render.json import encode
from desk.render.licence import content_signal, licence_xml, site_reuse, usage_words
from desk.render.pictures import card_src
from desk.render.since import EDITION, NEWSROOM, ListKind
from desk.render.sitemaps import PartPages, SitemapEntry
from desk.render.templates import Alternate, Crumb, PageMeta, isotime

SitemapEntries = Iterator[SitemapEntry]


@dataclass(frozen=True)
class PageKind:
    """One kind of page: its units and its sitemap entries."""

    name: str
    units: Callable[[RenderContext], Units]
    sitemap: Callable[[RenderContext], SitemapEntries] | None = None
    # The kinds of lists of stories its pages are (desk.render.since.ListKind): a change
    # to a story touches their pages of its groups, and their others keep their keys.
    # A kind with none keys each page by its inputs on every build.
    lists: tuple[ListKind, ...] = ()


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
    draft: bool = False
    image: str = ""  # the lead image's small variant, as the card shows it ('' for none)
    made: str = CARD_WRITTEN  # how the story was made (desk.render.disclosure.card_marker)

    def as_json(self) -> dict[str, Any]:
        """The listing entry of index.json (`draft` only on a draft, in the preview)."""
        entry: dict[str, Any] = {
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
        if self.draft:
            entry["draft"] = True
        return entry


@dataclass(frozen=True)
class CardGroup:
    title: str
    href: str
    cards: tuple[Card, ...]


@dataclass(frozen=True)
class Pager:
    """A list page's place among its pages (see desk.content.catalog.stable_pages)."""

    page: int  # 0: the latest page; archive pages count from 1, the oldest
    archived: int  # the latest page's count of archive pages (0 on archive pages)
    prev_href: str | None
    next_href: str | None
    prev_url: str | None
    next_url: str | None


def href(ctx: RenderContext, path: str) -> str:
    """A root-relative link to a site path."""
    return urls.href(ctx.config, path)


def absolute(ctx: RenderContext, path: str) -> str:
    """The absolute URL of a site path."""
    return urls.absolute(ctx.config, path)


def card(ctx: RenderContext, item: LoadedStory) -> Card:
    """A story as lists show it."""
    story = item.summary
    texts = story.texts  # read once: each text read alone is a query of the index
    path = item.url_path
    return Card(
        id=story.id,
        headline=texts.headline,
        dek=texts.dek,
        angle=texts.angle,
        href=href(ctx, path),
        url=absolute(ctx, path),
        published_at=story.published_at,
        newsroom=story.newsroom,
        newsroom_title=ctx.catalog.newsroom(story.newsroom).title,
        newsroom_href=href(ctx, urls.newsroom_path(story.newsroom)),
        edition=story.edition,
        edition_href=href(ctx, urls.edition_path(story.edition)),
        trust=story.trust,
        trust_text=texts.trust_text or story.trust,
        digest=ctx.stories.digests.get(path, ""),
        draft=item.draft,
        image=card_src(story.images, ctx.config, ctx.catalog.media),
        made=card_marker(texts.reviewed_by),
    )


def by_newsroom(ctx: RenderContext, stories: Sequence[LoadedStory]) -> tuple[CardGroup, ...]:
    """Cards grouped by newsroom, newsrooms in key order."""
    groups: dict[str, list[LoadedStory]] = {}
    for item in stories:
        groups.setdefault(item.summary.newsroom, []).append(item)
    return tuple(
        CardGroup(ctx.catalog.newsroom(key).title, href(ctx, urls.newsroom_path(key)),
                  tuple(card(ctx, s) for s in items))
        for key, items in sorted(groups.items())
    )


def crumbs(ctx: RenderContext, *trail: tuple[str, str]) -> tuple[Crumb, ...]:
    """Breadcrumbs from the home page along `trail` of (title, path)."""
    home = Crumb(ctx.config.title, href(ctx, urls.HOME))
    return (home, *(Crumb(title, href(ctx, path) if path else "") for title, path in trail))


def pager(ctx: RenderContext, page: Slice[Any]) -> Pager:
    """Links to a page's neighbours."""
    return Pager(
        page=page.number,
        archived=page.archived,
        prev_href=href(ctx, page.prev_path) if page.prev_path else None,
        next_href=href(ctx, page.next_path) if page.next_path else None,
        prev_url=absolute(ctx, page.prev_path) if page.prev_path else None,
        next_url=absolute(ctx, page.next_path) if page.next_path else None,
    )


def page_fields(page: Pager) -> dict[str, Any]:
    """A list page's place in its index.json: `page` (0 on the latest page, archive pages
    from 1, the oldest), the latest page's `archive_pages`, and the newer (`prev`) and
    older (`next`) pages' URLs."""
    fields: dict[str, Any] = {"page": page.page}
    if page.page == 0:
        fields["archive_pages"] = page.archived
    fields.update(prev=page.prev_url, next=page.next_url)
    return fields


def place(page: Slice[Any]) -> tuple[str, ...]:
    """What a list page shows of its place among its pages (part of its inputs)."""
    return (str(page.number), str(page.archived), page.prev_path or "", page.next_path or "")


def title_suffix(page: Slice[Any]) -> str:
    """The part of an archive page's title that tells it from the others."""
    return f" · page {page.number}" if page.number else ""


def listing(title: str, url: str, cards: Sequence[Card], page: Pager | None = None,
            **extra: Any) -> dict[str, Any]:
    """The index.json of a list page."""
    data: dict[str, Any] = {"title": title, "url": url}
    if page is not None:
        data.update(page_fields(page))
    data.update(extra)
    data["stories"] = [c.as_json() for c in cards]
    return data


def html_page(ctx: RenderContext, path: str, template: str, meta: PageMeta, data: bytes,
              **context: Any) -> list[Output]:
    """A list page rendered from its template, and its index.json."""
    html = ctx.env.get_template(template).render(page=meta, site=ctx.site, **context)
    return [Output(path, html.encode("utf-8")), Output(path + "index.json", data)]


def markdown_page(ctx: RenderContext, path: str, template: str, meta: PageMeta, data: bytes,
                  **context: Any) -> list[Output]:
    """A list page in HTML, Markdown (its template's `.md.jinja` twin) and index.json."""
    html, listed = html_page(ctx, path, template, meta, data, **context)
    markdown = ctx.env.get_template(template.removesuffix(".html") + ".md.jinja").render(
        page=meta, site=ctx.site, **context)
    return [html, Output(path + "index.md", markdown.encode("utf-8")), listed]


def shown_page(ctx: RenderContext, path: str, template: str, meta: PageMeta,
               data: dict[str, Any], **context: Any) -> Unit:
    """A list page whose inputs are what it shows: its meta, context and listing."""
    encoded = encode(data)
    inputs = (path, template, repr(meta), repr(sorted(context.items())), encoded.decode())
    return Unit(path, inputs,
                lambda: html_page(ctx, path, template, meta, encoded, **context))


def members_inputs(ctx: RenderContext, path: str, template: str,
                   stories: Sequence[LoadedStory], *extra: str) -> tuple[str, ...]:
    """The inputs of a page that shows only its member stories (and `extra`): each
    story's own key covers all of the story a page can show, its newsroom's title too."""
    # The keys as one part: the key hashes each part apart (a length and the bytes), and
    # the list pages of 100,000 stories hold 400,000 keys. No key holds a NUL.
    return (path, template, *extra, "\x00".join(ctx.story_keys(stories)))


def stable_unit(page: Slice[LoadedStory], settled: Callable[[int], bool],
                render: Callable[[], list[Output]], inputs: Callable[[], tuple[str, ...]]
                ) -> Unit:
    """A page of a list of stories in stable pages: carried over when it is `settled`
    (see RenderContext.settled), its inputs made only if the last build's are gone."""
    if settled(page.number):
        return Unit(page.path, None, render, carried=inputs)
    return Unit(page.path, inputs(), render)


def stable_units(stories: Sequence[LoadedStory], size: int, path_of: Callable[[int], str],
                 settled: Callable[[int], bool],
                 unit_of: Callable[[Slice[LoadedStory]], Unit]) -> Units:
    """The units of a list's stable pages (`unit_of` a page: its stable_unit): the
    settled pages' as one batch of ids, a page made only for those the ledger cannot
    carry (CarriedUnits); then the others'. An hour at 100,000 stories carries about
    15,000 archive pages of newsrooms, beats and agents."""
    page = partial(stable_page, stories, size, path_of)
    return carried_apart(page_numbers(len(stories), size), settled, path_of,
                         lambda number: unit_of(page(number)))


# The front page: the latest edition, then the newest stories of every newsroom not
# already in it, and the editions before it.
FRONT_STORIES_PER_NEWSROOM = 4
FRONT_EDITIONS = 6


def front_units(ctx: RenderContext) -> Units:
    """/: leads with the latest edition, then each newsroom's newest other stories and
    the recent editions, in HTML and in its index.json."""
    catalog, config = ctx.catalog, ctx.config
    latest = catalog.latest_edition
    stories = latest.stories if latest else ()
    groups = by_newsroom(ctx, stories)
    cards = [c for g in groups for c in g.cards]  # in the order the page shows them
    newest_by_newsroom = _newest_elsewhere(ctx, {s.url_path for s in stories})
    editions = [(g.key, href(ctx, urls.edition_path(g.key)), len(g.stories))
                for g in catalog.editions[1: 1 + FRONT_EDITIONS]]
    meta = PageMeta(title=config.title, description=config.description,
                    canonical=absolute(ctx, urls.HOME))
    newsrooms = [(g.title, href(ctx, urls.newsroom_path(g.key)), len(g.stories))
                 for g in catalog.newsrooms]
    data = listing(
        config.title, absolute(ctx, urls.HOME), cards,
        edition=latest.key if latest else None,
        newsrooms=[{"newsroom": g.key, "title": g.title,
                    "url": absolute(ctx, urls.newsroom_path(g.key)),
                    "stories": [c.as_json() for c in group.cards]}
                   for g, group in zip(catalog.newsrooms, newest_by_newsroom, strict=True)],
        editions=[{"edition": key, "stories": count,
                   "url": absolute(ctx, urls.edition_path(key))}
                  for key, _, count in editions])
    yield shown_page(
        ctx, urls.HOME, "front.html", meta, data,
        edition=latest.key if latest else "",
        edition_href=href(ctx, urls.edition_path(latest.key)) if latest else "",
        groups=groups,
        newest=tuple(g for g in newest_by_newsroom if g.cards),
        editions=editions,
        newsrooms=newsrooms,
    )


def _newest_elsewhere(ctx: RenderContext, shown: set[str]) -> tuple[CardGroup, ...]:
    """Each newsroom's newest stories that the latest edition does not show already."""
    return tuple(
        CardGroup(g.title, href(ctx, urls.newsroom_path(g.key)), tuple(
            card(ctx, s) for s in islice((s for s in g.stories if s.url_path not in shown),
                                         FRONT_STORIES_PER_NEWSROOM)))
        for g in ctx.catalog.newsrooms)


def everything(ctx: RenderContext) -> datetime:
    """The latest modification of any published story."""
    return ctx.catalog.last_modified


def front_sitemap(ctx: RenderContext) -> SitemapEntries:
    yield urls.HOME, everything(ctx)


def newsrooms_units(ctx: RenderContext) -> Units:
    """/n/: every newsroom (rendered on every build: one small page)."""
    yield Unit(urls.NEWSROOMS, None, lambda: newsrooms_index(ctx))


def newsrooms_index(ctx: RenderContext) -> list[Output]:
    groups = ctx.catalog.newsrooms
    rows = [(g.title, href(ctx, urls.newsroom_path(g.key)), len(g.stories)) for g in groups]
    title = "Newsrooms"
    meta = PageMeta(title=f"{title} · {ctx.config.title}",
                    description=f"Every newsroom of {ctx.config.title}.",
                    canonical=absolute(ctx, urls.NEWSROOMS),
                    breadcrumbs=crumbs(ctx, (title, "")))
    data = {
        "title": title,
        "url": absolute(ctx, urls.NEWSROOMS),
        "newsrooms": [
            {"newsroom": g.key, "title": g.title, "stories": len(g.stories),
             "url": absolute(ctx, urls.newsroom_path(g.key))}
            for g in groups
        ],
    }
    html = ctx.env.get_template("newsrooms.html").render(page=meta, site=ctx.site, rows=rows)
    return [Output(urls.NEWSROOMS, html.encode("utf-8")),
            Output(urls.NEWSROOMS + "index.json", encode(data))]


def newsrooms_sitemap(ctx: RenderContext) -> SitemapEntries:
    yield urls.NEWSROOMS, everything(ctx)


def newsroom_slices(ctx: RenderContext, group: Group) -> Iterator[Slice[LoadedStory]]:
    """The pages of one newsroom, newest first."""
    return stable_pages(group.stories, ctx.config.page_size,
                        lambda n: urls.newsroom_path(group.key, n))


def newsroom_units(ctx: RenderContext) -> Units:
    """/n/NEWSROOM/ and its later pages."""
    for group in ctx.catalog.newsrooms:
        settled = ctx.settled(NEWSROOM.group(group.key), group.stories)
        if settled is not None:
            yield from stable_units(group.stories, ctx.config.page_size,
                                    partial(urls.newsroom_path, group.key), settled,
                                    partial(_newsroom_stable_unit, ctx, group, settled))
            continue
        for page, inputs in _newsroom_inputs(ctx, group):
            yield Unit(page.path, inputs, _newsroom_page(ctx, group, page))


def _newsroom_stable_unit(ctx: RenderContext, group: Group, settled: Callable[[int], bool],
                          page: Slice[LoadedStory]) -> Unit:
    return stable_unit(page, settled, _newsroom_page(ctx, group, page),
                       partial(_newsroom_page_inputs, ctx, group, page))


def _newsroom_inputs(ctx: RenderContext, group: Group
                     ) -> list[tuple[Slice[LoadedStory], tuple[str, ...]]]:
    """Each page of a newsroom with its inputs."""
    return [(page, _newsroom_page_inputs(ctx, group, page))
            for page in newsroom_slices(ctx, group)]


def _newsroom_page_inputs(ctx: RenderContext, group: Group, page: Slice[LoadedStory]
                          ) -> tuple[str, ...]:
    return members_inputs(ctx, page.path, "newsroom.html", page.items, group.title,
                          *place(page))


def _newsroom_page(ctx: RenderContext, group: Group,
                   page: Slice[LoadedStory]) -> Callable[[], list[Output]]:
    def render() -> list[Output]:
        cards = [card(ctx, s) for s in page.items]
        links = pager(ctx, page)
        meta = PageMeta(
            title=f"{group.title}{title_suffix(page)} · {ctx.config.title}",
            description=f"Stories from the {group.title} newsroom of {ctx.config.title}.",
            canonical=absolute(ctx, page.path),
            alternates=tuple(_feed_alternates(ctx, group)),
            breadcrumbs=crumbs(ctx, ("Newsrooms", urls.NEWSROOMS), (group.title, "")),
        )
        data = listing(group.title, absolute(ctx, page.path), cards, links,
                       newsroom=group.key)
        return html_page(ctx, page.path, "newsroom.html", meta, encode(data),
                         title=group.title, cards=cards, pager=links,
                         feed_href=href(ctx, urls.feed_path(urls.FEED_RSS, group.key)))
    return render


def newsroom_sitemap(ctx: RenderContext) -> SitemapEntries:
    for group in ctx.catalog.newsrooms:
        yield from _newsroom_entries(ctx, group)


def _newsroom_entries(ctx: RenderContext, group: Group) -> list[tuple[str, datetime]]:
    return [(page.path, page_newest(group.stories, group.corrected, page))
            for page in newsroom_slices(ctx, group)]


def _feed_alternates(ctx: RenderContext, group: Group) -> Iterator[Alternate]:
    return feed_alternates(ctx, urls.newsroom_path(group.key), group.title)


def feed_alternates(ctx: RenderContext, folder: str, title: str) -> Iterator[Alternate]:
    """The three feeds in a list page's folder, as its head links them."""
    for kind, mime, label in (
        (urls.FEED_RSS, "application/rss+xml", "RSS"),
        (urls.FEED_ATOM, "application/atom+xml", "Atom"),
        (urls.FEED_JSON, "application/feed+json", "JSON Feed"),
    ):
        yield Alternate(mime, href(ctx, urls.feed_in(folder, kind)), f"{title} ({label})")


def editions_slices(ctx: RenderContext) -> Iterator[Slice[Group]]:
    """The pages of the editions archive, newest first."""
    return stable_pages(ctx.catalog.editions, ctx.config.page_size, urls.editions_index_path)


def editions_units(ctx: RenderContext) -> Units:
    """/editions/ and its later pages. A page shows its place and each of its editions'
    key and count; the rest is the site's (in the site key): its inputs are those, not
    the page made to be hashed."""
    for page in editions_slices(ctx):
        shown = " ".join(f"{g.key}={len(g.stories)}" for g in page.items)
        yield Unit(page.path, (page.path, "editions.html", *place(page), shown),
                   partial(_editions_render, ctx, page))


def _editions_render(ctx: RenderContext, page: Slice[Group]) -> Iterable[Output]:
    return _editions_unit(ctx, page).render()


def _editions_unit(ctx: RenderContext, page: Slice[Group]) -> Unit:
    """One page of the editions archive (which shows each edition's key and count)."""
    rows = [(g.key, href(ctx, urls.edition_path(g.key)), len(g.stories))
            for g in page.items]
    links = pager(ctx, page)
    meta = PageMeta(title=f"Editions{title_suffix(page)} · {ctx.config.title}",
                    description=f"Every edition of {ctx.config.title}, newest first.",
                    canonical=absolute(ctx, page.path),
                    breadcrumbs=crumbs(ctx, ("Editions", "")))
    data = {
        "title": "Editions",
        "url": absolute(ctx, page.path),
        **page_fields(links),
        "editions": [
            {"edition": g.key, "stories": len(g.stories),
             "url": absolute(ctx, urls.edition_path(g.key))}
            for g in page.items
        ],
    }
    return shown_page(ctx, page.path, "editions.html", meta, data, rows=rows, pager=links)


def editions_sitemap(ctx: RenderContext) -> SitemapEntries:
    for page in editions_slices(ctx):
        yield page.path, _newest_of_groups(page.items)


def _newest_of_groups(groups: Sequence[Group]) -> datetime:
    return max((g.newest for g in groups), default=EPOCH)


def edition_units(ctx: RenderContext) -> Units:
    """/editions/EDITION/, one per hourly edition: those whose inputs are the last
    build's first, in one batch (most of them, every hour), then the others."""
    editions = ctx.catalog.editions
    return carried_apart(range(len(editions)),
                         lambda i: ctx.unchanged(EDITION.group(editions[i].key)),
                         lambda i: urls.edition_path(editions[i].key),
                         partial(_edition_unit, ctx, editions))


def _edition_unit(ctx: RenderContext, editions: Sequence[Group], i: int) -> Unit:
    """The unit of the i-th edition: carried when its inputs are the last build's (see
    RenderContext.unchanged), else keyed by them."""
    group = editions[i]
    # Its neighbours by its place in the list (not looked up by key for each of 40,000
    # at 100,000 stories).
    newer = editions[i - 1] if i > 0 else None
    older = editions[i + 1] if i + 1 < len(editions) else None
    neighbours = (older.key if older else "", newer.key if newer else "")
    path = urls.edition_path(group.key)
    render = _edition_page(ctx, group, older, newer)
    inputs = partial(members_inputs, ctx, path, "edition.html", group.stories, *neighbours)
    name = EDITION.group(group.key)
    if ctx.unchanged(name):
        return Unit(path, None, render, carried=inputs)
    return Unit(path, inputs(), render)


def _edition_page(ctx: RenderContext, group: Group, older: Group | None,
                  newer: Group | None) -> Callable[[], list[Output]]:
    def link(g: Group | None) -> tuple[str, str] | None:
        return (g.key, href(ctx, urls.edition_path(g.key))) if g else None

    def render() -> list[Output]:
        path = urls.edition_path(group.key)
        groups = by_newsroom(ctx, group.stories)
        cards = [c for g in groups for c in g.cards]  # in the order the page shows them
        meta = PageMeta(title=f"Edition {group.key} · {ctx.config.title}",
                        description=f"The {group.key}:00 UTC edition of {ctx.config.title}.",
                        canonical=absolute(ctx, path),
                        breadcrumbs=crumbs(ctx, ("Editions", urls.EDITIONS), (group.key, "")))
        data = listing(f"Edition {group.key}", absolute(ctx, path), cards, edition=group.key,
                       previous=absolute(ctx, urls.edition_path(older.key)) if older else None,
                       next=absolute(ctx, urls.edition_path(newer.key)) if newer else None)
        return html_page(ctx, path, "edition.html", meta, encode(data), edition=group.key,
                         groups=groups, older=link(older), newer=link(newer))
    return render


def edition_sitemap(ctx: RenderContext) -> SitemapEntries:
    # 40,000 at 100,000 stories, made when the sitemap's part of their month is: each
    # run of one month's editions (all of them, newest first) one entry.
    for _, run in groupby(ctx.catalog.editions, key=_edition_month):
        editions = list(run)
        yield PartPages(urls.edition_path(editions[0].key), len(editions),
                        max(group.newest for group in editions),
                        partial(_edition_entries, editions))


def _edition_entry(group: Group) -> tuple[str, datetime]:
    return urls.edition_path(group.key), group.newest


def _edition_entries(editions: list[Group]) -> list[tuple[str, datetime]]:
    return list(map(_edition_entry, editions))


def _edition_month(group: Group) -> str:
    """What of an edition's path names its sitemap part, read from its key (YYYY-MM-)."""
    return group.key[:urls.SITEMAP_PART_HEAD - len(urls.EDITIONS)]


def reuse_units(ctx: RenderContext) -> Units:
    """/terms/reuse/, /.well-known/reuse.json and /license.xml: one unit, from one table."""
    yield Unit(urls.REUSE_TERMS, None, lambda: reuse_pages(ctx))


def reuse_pages(ctx: RenderContext) -> list[Output]:
    config = ctx.config
    reuse = site_reuse(config)
    meta = PageMeta(title=f"Reuse terms · {config.title}",
                    description=reuse.get("summary", ""),
                    canonical=absolute(ctx, urls.REUSE_TERMS),
                    breadcrumbs=crumbs(ctx, ("Reuse terms", "")))
    html = ctx.env.get_template("reuse.html").render(
        page=meta, site=ctx.site, reuse=reuse, usages=usage_words(reuse),
        schema_href=href(ctx, urls.STORY_SCHEMA))
    return [Output(urls.REUSE_TERMS, html.encode("utf-8")),
            Output(urls.REUSE_JSON, encode(reuse)),
            Output(urls.LICENCE, licence_xml(config))]


def reuse_sitemap(ctx: RenderContext) -> SitemapEntries:
    yield urls.REUSE_TERMS, everything(ctx)


def search_units(ctx: RenderContext) -> Units:
    """/search/: the search page over the story index (when search is on)."""
    if ctx.config.search:
        yield Unit(urls.SEARCH, None, lambda: search_page(ctx))


def search_page(ctx: RenderContext) -> list[Output]:
    meta = PageMeta(title=f"Search · {ctx.config.title}",
                    description=f"Search every story of {ctx.config.title}.",
                    canonical=absolute(ctx, urls.SEARCH),
                    breadcrumbs=crumbs(ctx, ("Search", "")))
    html = ctx.env.get_template("search.html").render(
        page=meta, site=ctx.site, bundles_href=href(ctx, urls.SEARCH_BUNDLES))
    return [Output(urls.SEARCH, html.encode("utf-8"))]


def not_found_units(ctx: RenderContext) -> Units:
    """/404.html."""
    yield Unit(urls.NOT_FOUND, None, lambda: not_found_page(ctx))


def not_found_page(ctx: RenderContext) -> list[Output]:
    meta = PageMeta(title=f"Page not found · {ctx.config.title}", description="",
                    canonical=absolute(ctx, urls.NOT_FOUND))
    html = ctx.env.get_template("404.html").render(page=meta, site=ctx.site)
    return [Output(urls.NOT_FOUND, html.encode("utf-8"))]


def robots_units(ctx: RenderContext) -> Units:
    """/robots.txt."""
    yield Unit(urls.ROBOTS, None,
               lambda: [Output(urls.ROBOTS, robots_txt(ctx.config).encode("utf-8"))])


def robots_txt(config: Config) -> str:
    """robots.txt: allow all, with the reuse terms' Content-Signal (when they permit or
    prohibit any use it names); the RSL licence file and both sitemaps. A preview's
    disallows everything."""
    if config.preview:
        return "User-agent: *\nDisallow: /\n"
    signal = content_signal(config)
    return (
        "User-agent: *\n"
        + (f"Content-Signal: {signal}\n" if signal else "")
        + "Allow: /\n\n"
        f"License: {urls.absolute(config, urls.LICENCE)}\n"
        f"Sitemap: {urls.absolute(config, urls.SITEMAP)}\n"
        f"Sitemap: {urls.absolute(config, urls.NEWS_SITEMAP)}\n"
    )


def key_file_units(ctx: RenderContext) -> Units:
    """/KEY.txt, holding only the IndexNow key, when the site has one."""
    key = ctx.config.key_file
    if key:
        path = urls.key_file_path(key)
        yield Unit(path, (key,), lambda: [Output(path, key.encode("utf-8"))])


PAGE_KINDS = (
    PageKind("front", front_units, front_sitemap),
    PageKind("newsrooms", newsrooms_units, newsrooms_sitemap),
    PageKind("newsroom", newsroom_units, newsroom_sitemap, lists=(NEWSROOM,)),
    PageKind("editions", editions_units, editions_sitemap),
    PageKind("edition", edition_units, edition_sitemap, lists=(EDITION,)),
    PageKind("reuse", reuse_units, reuse_sitemap),
    PageKind("search", search_units),
    PageKind("404", not_found_units),
    PageKind("robots", robots_units),
    PageKind("indexnow-key", key_file_units),
)
