"""JSON renderers: the story itself (index.json) and stable JSON encoding."""

from __future__ import annotations

import json
from typing import Any

import orjson

from desk.config import Config
from desk.loader import expected_urls
from desk.models import Links, Story


def encode(data: Any) -> bytes:
    """Stable JSON: UTF-8 unescaped, two-space indent, trailing newline."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        # orjson stops at integers beyond 64 bits, which an unknown key may hold.
        return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def published_story(story: Story, config: Config) -> Story:
    """The story with url, links and reuse.canonical_url recomputed from the layout."""
    expected = expected_urls(story, config)
    links = Links.model_validate({
        "html": expected["/links/html"],
        "json": expected["/links/json"],
        "markdown": expected["/links/markdown"],
        "newsroom": expected["/links/newsroom"],
        "edition": expected["/links/edition"],
    })
    if story.links is not None:
        # Keep the input's key order and any extra keys it had.
        links = story.links.model_copy(update=dict(links))
    update: dict[str, Any] = {"url": expected["/url"], "links": links}
    if story.reuse is not None:
        update["reuse"] = story.reuse.model_copy(
            update={"canonical_url": expected["/reuse/canonical_url"]})
    return story.model_copy(update=update)


def story_json(story: Story, config: Config, like: dict[str, Any] | None = None) -> bytes:
    """index.json: the story in schema hangingcontext.desk/1, in the key order of `like`
    (the parsed input), else in the models' field order."""
    return encode(published_story(story, config).to_json_data(like))

