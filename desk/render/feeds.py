"""Feeds, site-wide and per newsroom: RSS 2.0, Atom (RFC 4287) and JSON Feed 1.1.

Each carries the latest `feed_size` stories with their full HTML (absolute URLs only);
a story with corrections is dated by its latest correction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime
from typing import Any

from jinja2 import Environment

from desk import urls
from desk.cache import Ledger, digest
from desk.catalog import Catalog
from desk.config import Config
from desk.loader import LoadedStory, read_story
from desk.prose import Prose
from desk.render import Output
from desk.render.json import encode
from desk.render.templates import isotime
from desk.render.view import StoryView, story_view

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"


@dataclass(frozen=True)
class Entry:
    """One story as a feed entry."""

    view: StoryView
    content_html: str

    @property
    def rfc822_published(self) -> str:
        """pubDate in RFC 822 form."""
        return format_datetime(self.view.story.published_at, usegmt=True)


@dataclass(frozen=True)
class Feed:
    """One feed's channel values, in all three formats."""

    title: str
    description: str
    home_url: str
    rss_url: str
    atom_url: str
    json_url: str
    updated: datetime
    entries: tuple[Entry, ...]

    @property
    def rfc822_updated(self) -> str:
        """lastBuildDate in RFC 822 form."""
        return format_datetime(self.updated, usegmt=True)


def render_feeds(
    catalog: Catalog,
    config: Config,
    env: Environment,
    prose: Prose,
    now: datetime,
    keys: dict[str, str] | None = None,
    remembered: dict[str, Entry] | None = None,
    ledger: Ledger | None = None,
    base: str = "",
) -> Iterator[Output]:
    """The site feeds, then each newsroom's.

    A feed whose entries' story keys are unchanged is linked from the last build (through
    `ledger`); only the stories of a changed feed are read again. `remembered` holds
    entries of earlier builds by story key (desk serve's memory); it is updated to the
    entries this build used.
    """
    entries: dict[str, Entry] = {}
    known = remembered if remembered is not None else {}
    by_key = keys or {}

    def entry(item: LoadedStory) -> Entry:
        path = item.url_path
        if path not in entries:
            key = by_key.get(path, "")
            found = known.get(key) if key else None
            if found is None:
                view = story_view(read_story(item)[0], catalog, config, prose)
                html = env.get_template("feed_content.html").render(view=view)
                found = Entry(view, html)
            entries[path] = found
        return entries[path]

    scopes: list[tuple[str | None, str, str, tuple[LoadedStory, ...]]] = [
        (None, config.title, config.description, catalog.published)
    ]
    for group in catalog.newsrooms:
        scopes.append((group.key, f"{group.title} · {config.title}",
                       f"Stories from the {group.title} newsroom of {config.title}.",
                       group.stories))
    for newsroom, title, description, stories in scopes:
        members = stories[: config.feed_size]
        unit = urls.feed_path(urls.FEED_RSS, newsroom)
        key = digest(base, unit, title, description, "" if members else isotime(now),
                     *(by_key.get(s.url_path, s.digest) for s in members))
        if ledger is not None and ledger.reuse(unit, key) is not None:
            continue
        chosen = tuple(entry(s) for s in members)
        home = urls.HOME if newsroom is None else urls.newsroom_path(newsroom)
        feed = Feed(
            title=title,
            description=description,
            home_url=urls.absolute(config, home),
            rss_url=urls.absolute(config, urls.feed_path(urls.FEED_RSS, newsroom)),
            atom_url=urls.absolute(config, urls.feed_path(urls.FEED_ATOM, newsroom)),
            json_url=urls.absolute(config, urls.feed_path(urls.FEED_JSON, newsroom)),
            updated=max((e.view.modified_at for e in chosen), default=now),
            entries=chosen,
        )
        rss = env.get_template("feed.xml").render(feed=feed, site=config)
        atom = env.get_template("atom.xml").render(feed=feed, site=config)
        outputs = [Output(urls.feed_path(urls.FEED_RSS, newsroom), rss.encode("utf-8")),
                   Output(urls.feed_path(urls.FEED_ATOM, newsroom), atom.encode("utf-8")),
                   Output(urls.feed_path(urls.FEED_JSON, newsroom),
                          encode(json_feed(feed, config)))]
        if ledger is not None:
            ledger.record(unit, key, outputs)
        yield from outputs
    if remembered is not None:
        remembered.clear()
        remembered.update({by_key[p]: e for p, e in entries.items() if p in by_key})


def json_feed(feed: Feed, config: Config) -> dict[str, Any]:
    """A JSON Feed 1.1 document, with desk's `_desk` extension on each item."""
    return {
        "version": JSON_FEED_VERSION,
        "title": feed.title,
        "home_page_url": feed.home_url,
        "feed_url": feed.json_url,
        "description": feed.description,
        "language": config.language,
        "authors": [{"name": config.title, "url": urls.absolute(config, urls.HOME)}],
        "items": [json_item(e, config) for e in feed.entries],
    }


def json_item(entry: Entry, config: Config) -> dict[str, Any]:
    """One JSON Feed item."""
    view = entry.view
    story = view.story
    item: dict[str, Any] = {
        "id": view.url,
        "url": view.url,
        "title": story.headline,
        "content_html": entry.content_html,
        "date_published": isotime(story.published_at),
        "date_modified": isotime(view.modified_at),
        "tags": [view.newsroom_title],
        "language": config.language,
        "_desk": {
            "id": story.id,
            "newsroom": story.newsroom,
            "edition": story.edition,
            "trust": story.labels.trust,
            "trust_text": story.labels.trust_text,
            "cited_manifest_ids": list(story.cited_manifest_ids),
            "citations": [
                {
                    "number": src.number,
                    "manifest_id": src.manifest.manifest_id,
                    "title": src.manifest.title,
                    "source_url": src.manifest.source_url,
                }
                for src in view.sources
            ],
            "json_url": urls.absolute(config, view.path + "index.json"),
            "markdown_url": urls.absolute(config, view.path + "index.md"),
        },
    }
    if story.dek:
        item["summary"] = story.dek
    return item
