"""JSON renderers: the story itself (index.json) and stable JSON encoding."""

from __future__ import annotations

import json
from typing import Any

import orjson

from desk.config import Config
from desk.content.loader import expected_urls
from desk.content.models import Links, Story, order_like


def encode(data: Any) -> bytes:
    """Stable JSON: UTF-8 unescaped, two-space indent, trailing newline."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    except TypeError:
        # orjson stops at integers beyond 64 bits, which an unknown key may hold.
        return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


# The links index.json gives every story, by their JSON keys, in the model's order.
LINK_KEYS = tuple(field.alias or name for name, field in Links.model_fields.items())


# The key of index.json that desk derives, not the story: how the story was made and
# who reviewed it (desk.render.disclosure), the facts its page's disclosure line states.
AUTHORSHIP = "authorship"


def story_json(story: Story, config: Config, like: dict[str, Any],
               authorship: dict[str, Any] | None = None) -> bytes:
    """index.json: the story in schema hangingcontext.desk/1, with url, links and
    reuse.canonical_url recomputed from the layout, in the key order of `like` (the parsed
    input it was validated from); keys the input lacked come after its own, in the
    models' order; then `authorship`, when given (derived, never the input's).

    What the story's model says with those three replaced (its `model_copy`) and dumped,
    patched into the dump instead: copying models cost twice the rest of index.json.
    The URLs need no validation: the base URL was checked as a story's URLs are, and
    the rest of each is made of checked path segments."""
    data: dict[str, Any] = story.model_dump(mode="json", by_alias=True, exclude_unset=True)
    expected = expected_urls(story, config)
    # url and then links, where the input lacked them, go after its keys in the models'
    # order (the only other key a dump may add is the first field's, `schema`, when the
    # input named it by its field name, schema_).
    data["url"] = expected["/url"]
    links = data.get("links")
    # All five links in the model's order, then the input's other keys: as a dump of
    # the model with every link set (an input may name one by its field name, json_).
    data["links"] = {**{key: expected[f"/links/{key}"] for key in LINK_KEYS},
                     **({k: v for k, v in links.items() if k not in LINK_KEYS}
                        if type(links) is dict else {})}
    if story.reuse is not None:
        data["reuse"]["canonical_url"] = expected["/reuse/canonical_url"]
    data = order_like(data, like)
    if authorship is not None:
        data.pop(AUTHORSHIP, None)
        data[AUTHORSHIP] = authorship
    return encode(data)
