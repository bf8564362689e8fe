"""Feeds, site-wide, per newsroom and per beat: RSS 2.0, Atom (RFC 4287) and JSON Feed 1.1.

Each carries the latest `feed_size` stories with their full HTML (absolute URLs only);
a story with corrections is dated by its latest correction. An entry's id is a tag URI of
the story id (desk.urls.entry_id), so a moved story stays one entry in feed readers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime
from functools import partial
from typing import Any, NamedTuple

import orjson
from jinja2 import Environment

from desk import urls
from desk.config import Config
from desk.content.catalog import Catalog
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.json import encode
from desk.render.templates import isotime
from desk.render.view import StoryView, story_view

JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
# (the folder of the feed's list page, title, description, member stories)
Scope = tuple[str, str, str, tuple[LoadedStory, ...]]


class Entry(NamedTuple):
    """One story as a feed entry, in each format: made once per story key (the key says
    everything the entry shows) and kept in the index, so a feed that changes reads its
    other entries from there, not from their story files."""

    modified_at: datetime
    rss: str  # the <item>
    atom: str  # the <entry>
    json: str  # the JSON Feed item, as JSON


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
    hub_url: str = ""  # the WebSub hub, when the site names one

    @property
    def rfc822_updated(self) -> str:
        """lastBuildDate in RFC 822 form."""
        return format_datetime(self.updated, usegmt=True)


def feed_scopes(catalog: Catalog, config: Config) -> Iterator[Scope]:
    """The site feed, then each newsroom's, then each beat's: (folder, title,
    description, member stories)."""
    yield urls.HOME, config.title, config.description, catalog.published[: config.feed_size]
    for group in catalog.newsrooms:
        yield (urls.newsroom_path(group.key), f"{group.title} · {config.title}",
               f"Stories from the {group.title} newsroom of {config.title}.",
               group.stories[: config.feed_size])
    for beat in catalog.beats:
        room = catalog.newsroom(beat.newsroom).title
        yield (urls.beat_path(beat.newsroom, beat.key), f"{room} › {beat.title} · {config.title}",
               f"Stories of the {beat.title} beat of the {room} newsroom of {config.title}.",
               beat.stories[: config.feed_size])


def feed_members(catalog: Catalog, config: Config) -> set[str]:
    """The paths of every story some feed carries."""
    return {s.url_path for scope in feed_scopes(catalog, config) for s in scope[3]}


def feed_units(ctx: RenderContext) -> Units:
    """Each feed in all three formats is one unit, keyed by its entries' story keys.

    Only the stories of a changed feed are read again, unless their entries were
    captured while they rendered (or kept by a long-running process).
    """
    for scope in feed_scopes(ctx.catalog, ctx.config):
        folder, title, description, members = scope
        inputs = (urls.feed_in(folder, urls.FEED_RSS), title, description,
                  "" if members else isotime(ctx.now),
                  *ctx.story_keys(members))
        yield Unit(inputs[0], inputs, partial(render_feed, ctx, scope))


def story_entry(ctx: RenderContext, item: LoadedStory) -> Entry:
    """A story's feed entry: captured, kept in the index, or made from its file."""
    key = ctx.story_key(item.url_path, item.digest)
    try:
        found = ctx.stories.entries.get(key)
    except KeyError:  # the index named it, but its row could not be read
        found = None
    if not isinstance(found, Entry):
        found = make_entry(story_view(ctx.read(item)[0], ctx.catalog, ctx.config, ctx.prose,
                                      item.draft), ctx.env, ctx.config)
        ctx.stories.entries[key] = found
    return found


def make_entry(view: StoryView, env: Environment, config: Config) -> Entry:
    """A story's feed entry from its view."""
    content_html = env.get_template("feed_content.html").render(view=view)
    published = format_datetime(view.story.published_at, usegmt=True)
    return Entry(
        view.modified_at,
        env.get_template("feed_item.xml").render(view=view, content_html=content_html,
                                                 published=published),
        env.get_template("atom_entry.xml").render(view=view, content_html=content_html),
        orjson.dumps(json_item(view, content_html, config)).decode())


def render_feed(ctx: RenderContext, scope: Scope) -> list[Output]:
    """One feed as RSS 2.0, Atom and JSON Feed."""
    folder, title, description, members = scope
    config = ctx.config
    chosen = tuple(story_entry(ctx, s) for s in members)
    feed = Feed(
        title=title,
        description=description,
        home_url=urls.absolute(config, folder),
        rss_url=urls.absolute(config, urls.feed_in(folder, urls.FEED_RSS)),
        atom_url=urls.absolute(config, urls.feed_in(folder, urls.FEED_ATOM)),
        json_url=urls.absolute(config, urls.feed_in(folder, urls.FEED_JSON)),
        updated=max((e.modified_at for e in chosen), default=ctx.now),
        entries=chosen,
        hub_url=config.feed_hub,
    )
    rss = ctx.env.get_template("feed.xml").render(feed=feed, site=config)
    atom = ctx.env.get_template("atom.xml").render(feed=feed, site=config)
    return [Output(urls.feed_in(folder, urls.FEED_RSS), rss.encode("utf-8")),
            Output(urls.feed_in(folder, urls.FEED_ATOM), atom.encode("utf-8")),
            Output(urls.feed_in(folder, urls.FEED_JSON), encode(json_feed(feed, config)))]


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
        **({"hubs": [{"type": "WebSub", "url": feed.hub_url}]} if feed.hub_url else {}),
        "items": [orjson.loads(e.json) for e in feed.entries],
    }


def json_item(view: StoryView, content_html: str, config: Config) -> dict[str, Any]:
    """One JSON Feed item."""
    story = view.story
    item: dict[str, Any] = {
        "id": view.entry_id,
        "url": view.url,
        "title": story.headline,
        "content_html": content_html,
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
            "disclosure": view.disclosure.as_json(view.agent_url),
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
    if view.lead is not None:
        item["image"] = view.lead.url
        # The credit travels with the picture: a licence condition for agency pictures.
        item["_desk"]["images"] = [
            {"url": p.url, "alt": p.alt, "caption": p.caption, "credit": p.credit,
             **({"width": p.width, "height": p.height} if p.sized else {})}
            for p in view.pictures]
    return item
