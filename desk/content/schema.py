"""The story format as a published contract: JSON Schemas (draft 2020-12) of a story file,
a withdrawal file and a page's front matter.

Made from the models (desk.content.models: each field's docstring is its description,
each value type names its rule in desk.content.patterns) and from the front matter's
constants (desk.content.pages), so the schemas say what the loader checks. `desk schema`
prints them; a build publishes them below /schema/ (desk.render.schemas). What no JSON
Schema can say (rules across fields, stories or files) is named in UNSAID, and the
story schema's description lists it.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from desk import urls
from desk.config import Config
from desk.content import pages, patterns
from desk.content.models import SCHEMA, Story, Withdrawal

DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Rules of `desk check` that a JSON Schema cannot say, by finding code: a story that the
# schema admits may still fail them.
UNSAID: tuple[tuple[str, str], ...] = (
    ("unknown-manifest", "every citation's manifest_id is one of /manifests"),
    ("cited-ids-mismatch", "/cited_manifest_ids lists exactly the manifests the text cites"),
    ("edition-gap", "the edition hour is near published_at (edition_gap_hours)"),
    ("duplicate-id", "no two stories, nor a story and a draft, have one id"),
    ("duplicate-url", "no two stories, nor a story and a draft, have one URL (published "
                      "date and slug)"),
    ("image-missing", "an image path names a file below content/media/ (image-invalid, "
                      "image-too-large, image-outside: a readable image within the size "
                      "limits, not leading outside)"),
    ("invalid-value", "whole numbers are written without a fraction or exponent (3, not "
                      "3.0)"),
    ("invalid-value", "no character of a URL's host stands for '/', '?', '#', '@' or ':' "
                      "once normalised (NFKC)"),
    ("too-deep", "arrays and objects nest at most 64 levels deep"),
    ("invalid-json", "the file is JSON without NaN, Infinity or numbers too large for a "
                     "double"),
    ("invalid-text", "text holds no lone UTF-16 surrogate escape"),
)

# What the schemas say of keys no model knows: desk keeps them (in index.json) and warns.
# `deprecated` is JSON Schema's own word; `deprecationMessage` is what VS Code shows.
_UNKNOWN_KEY_TEXT = ("A key desk does not know: kept in index.json, reported as a warning "
                     "(unknown-key).")
_UNKNOWN_KEY = {"description": _UNKNOWN_KEY_TEXT, "deprecated": True,
                "deprecationMessage": _UNKNOWN_KEY_TEXT}
_STORY_NOTE = (
    "A story file of desk's format hangingcontext.desk/1. Keys not listed here are kept "
    "and reported as warnings (unknown-key): each object's additionalProperties marks "
    "them deprecated, so editors flag them without refusing the file. desk removes "
    "control characters from text with a warning (control-characters) before checking "
    "it; this schema checks text as written. desk also reads datetimes spelt otherwise "
    "than RFC 3339 (a space for the T, no seconds, +0200) and URLs whose host is an IPv6 "
    "address in brackets; this schema admits neither. Rules no JSON Schema can say, which "
    "desk check also applies: "
)


def schema_url(config: Config, path: str) -> str:
    """The published URL of the schema at site path `path` (urls.STORY_SCHEMA...)."""
    return urls.absolute(config, path)


def story_schema(config: Config) -> dict[str, Any]:
    """The JSON Schema of a story file, its `$id` under the site's base URL."""
    schema = copy.deepcopy(_story_body())
    unsaid = "; ".join(f"{rule} ({code})" for code, rule in UNSAID)
    return _headed(schema_url(config, urls.STORY_SCHEMA), f"desk story ({SCHEMA})",
                   _STORY_NOTE + unsaid + ".", schema)


def withdrawal_schema(config: Config) -> dict[str, Any]:
    """The JSON Schema of a file of content/withdrawn/."""
    schema = copy.deepcopy(_model_body(Withdrawal))
    return _headed(schema_url(config, urls.WITHDRAWAL_SCHEMA), "desk withdrawal",
                   "One file of content/withdrawn/: which story is withdrawn, when and why. "
                   "A withdrawal of an id that no story has and that was never published is "
                   "an error (withdrawn-unknown), as is a second withdrawal of one id "
                   "(duplicate-withdrawal).", schema)


def page_schema(config: Config) -> dict[str, Any]:
    """The JSON Schema of a page's front matter, read as an object (desk's own parser
    reads `key: value` lines; `nav` is a whole number)."""
    one_line = {"type": "string", "pattern": "^[^\\n]*$(?!\\n)"}
    not_blank = f"^[^\\n]*[^\\n{patterns.SPACE}][^\\n]*$(?!\\n)"
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "title": {**one_line, "pattern": not_blank,
                      "maxLength": pages.MAX_TITLE,
                      "description": f"The page's title: one line, at most "
                                     f"{pages.MAX_TITLE} characters."},
            "description": {**one_line, "maxLength": pages.MAX_DESCRIPTION,
                            "description": f"The page's summary: one line, at most "
                                           f"{pages.MAX_DESCRIPTION} characters."},
            "nav": {"type": "integer", "minimum": -99999, "maximum": 999999,
                    "description": "Puts the page in the footer's links, in this order."},
            "policy": {"enum": list(pages.POLICY_KINDS),
                       "description": "The schema.org property of the publisher the page "
                                      "serves (one page per policy)."},
        },
        "required": ["title"],
        "additionalProperties": False,
    }
    return _headed(schema_url(config, urls.PAGE_SCHEMA), "desk page front matter",
                   "The front matter of a page below content/pages/ (between two '---' "
                   "lines, `key: value` each).", schema)


def schemas(config: Config) -> dict[str, dict[str, Any]]:
    """Every schema desk publishes, by its site path."""
    return {urls.STORY_SCHEMA: story_schema(config),
            urls.WITHDRAWAL_SCHEMA: withdrawal_schema(config),
            urls.PAGE_SCHEMA: page_schema(config)}


def _headed(schema_id: str, title: str, description: str,
            body: dict[str, Any]) -> dict[str, Any]:
    body.pop("title", None)
    body.pop("description", None)
    return {"$schema": DIALECT, "$id": schema_id, "title": title,
            "description": description, **body}


@cache
def _story_body() -> dict[str, Any]:
    schema = copy.deepcopy(_model_body(Story))
    # A citation names at least one claim: desk check refuses one without (empty-claims).
    cite = schema["$defs"]["Cite"]
    cite["properties"]["claim_ids"]["minItems"] = 1
    cite["properties"]["claim_ids"].pop("default", None)
    cite["required"] = ["claim_ids", *cite.get("required", [])]
    return schema


@cache
def _model_body(model: type[Story] | type[Withdrawal]) -> dict[str, Any]:
    """The model's own JSON Schema, tidied: no generated titles, descriptions on one line,
    unknown keys marked."""
    schema = model.model_json_schema(mode="validation")
    _tidy(schema)
    return schema


def _tidy(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _tidy(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("additionalProperties") is True:
        node["additionalProperties"] = dict(_UNKNOWN_KEY)
    if isinstance(node.get("description"), str):
        node["description"] = " ".join(node["description"].split())
    for key, value in node.items():
        if key in ("properties", "$defs"):
            for item in value.values():
                if key == "properties":
                    item.pop("title", None)
                _tidy(item)
        elif key not in ("examples", "default", "const", "enum"):
            _tidy(value)


# How the field table names the value types of desk.content.patterns, by their pattern.
_KINDS = {patterns.SEGMENT["pattern"]: "slug", patterns.EDITION["pattern"]: "edition",
          patterns.DATETIME["pattern"]: "datetime", patterns.DATE["pattern"]: "date",
          patterns.URL["pattern"]: "URL", patterns.IMAGE_URL["pattern"]: "URL or media path"}


def unsaid_rules() -> str:
    """The rules no JSON Schema can say, as a Markdown list (docs/content.md holds it)."""
    return "".join(f"- {rule} (`{code}`)\n" for code, rule in UNSAID)


def field_table(config: Config) -> str:
    """Every key of a story file in a Markdown table, from the story schema.
    docs/content.md holds it (tests/test_schema.py keeps the two the same)."""
    schema = story_schema(config)
    lines = ["| Key | Value | Required | What it is |", "| --- | --- | --- | --- |"]
    lines += _rows(schema, schema["$defs"], "", {})
    return "\n".join(lines) + "\n"


def _rows(node: dict[str, Any], defs: dict[str, Any], prefix: str,
          shown: dict[str, str]) -> list[str]:
    """A row for each key of node, each object's keys after it (the first time)."""
    rows = []
    required = set(node.get("required", ()))
    for key, prop in node.get("properties", {}).items():
        path = prefix + key
        target, suffix = _model_of(prop)
        value = _value(prop, defs)
        if target in shown:
            value += f" (as `{shown[target]}`)"
        description = " ".join(prop.get("description", "").split()).replace("|", "\\|")
        rows.append(f"| `{path}` | {value} | {'yes' if key in required else ''} "
                    f"| {description} |")
        if target is not None and target not in shown:
            shown[target] = path
            rows += _rows(defs[target], defs, f"{path}{suffix}.", shown)
    return rows


def _model_of(prop: dict[str, Any]) -> tuple[str | None, str]:
    """The model a property holds (its name in $defs), and what its path gains ('[]' for
    an array of them)."""
    for option in prop.get("anyOf", [prop]):
        if "$ref" in option:
            return option["$ref"].rpartition("/")[2], ""
        if option.get("type") == "array" and "$ref" in option.get("items", {}):
            return option["items"]["$ref"].rpartition("/")[2], "[]"
    return None, ""


def _value(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    if "anyOf" in prop:
        options = [o for o in prop["anyOf"] if o.get("type") != "null"]
        if prop["anyOf"] == patterns.MAYBE_SEGMENT["anyOf"]:
            return "slug or empty"
        return " or ".join(_value(o, defs) for o in options) + (
            " or null" if len(options) < len(prop["anyOf"]) else "")
    if "const" in prop:
        return f"`{prop['const']}`"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{v}`" for v in prop["enum"])
    if "$ref" in prop:
        return "object"
    kind = prop.get("type")
    if kind == "array":
        least = f", at least {prop['minItems']}" if prop.get("minItems") else ""
        return f"array of {_plural(_value(prop['items'], defs))}{least}"
    if kind == "object":
        return f"object of {_plural(_value(prop.get('additionalProperties', {}), defs))}"
    if kind == "string":
        named = _KINDS.get(prop.get("pattern", ""), "text")
        return named + (", not empty" if prop.get("minLength") else "")
    return {"integer": "whole number", "boolean": "true or false"}.get(str(kind), "any")


def _plural(value: str) -> str:
    return {"object": "objects", "text": "text", "slug": "slugs"}.get(value, value + "s")
