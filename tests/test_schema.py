"""The story format's JSON Schema (desk.content.schema) says what desk's loader says.

Real validators judge: `jsonschema` (Python's regular expressions) in-process, and
`check-jsonschema` (ECMA-262 regular expressions, as editors use) as a process. Generated
stories, valid and broken in every way the loader knows, get the same verdict from the
schema as from desk (its parser, loader and the checks of one story), but for the rules
the schema names as unsaid (UNSAID) and desk's documented leniencies, which `canonical`
undoes first.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
import regress
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError
from storygen import REPO, make_story, seed, write_story

from desk.config import Config
from desk.content import patterns
from desk.content.checks import check_story
from desk.content.findings import Finding
from desk.content.loader import MAX_NESTING, load_withdrawal_file, parse_json, validate_story
from desk.content.models import (
    CHANGE_KINDS,
    IsoDate,
    Story,
    UtcDatetime,
    Withdrawal,
)
from desk.content.models import (
    SCHEMA as SCHEMA_NAME,
)
from desk.content.pages import POLICY_KINDS, front_matter
from desk.content.prose import clean_text
from desk.content.schema import (
    UNSAID,
    field_table,
    page_schema,
    story_schema,
    unsaid_rules,
    withdrawal_schema,
)
from desk.render.json import encode, story_json
from desk.scaffold import EDITOR_SETTINGS, EXAMPLE_STORY, scaffold
from desk.urls import PAGE_SCHEMA as PAGE_PATH
from desk.urls import STORY_SCHEMA as STORY_PATH
from desk.urls import WITHDRAWAL_SCHEMA as WITHDRAWAL_PATH

NOW_BUILD = "2026-11-15T00:00:00Z"
EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "200"))
CONFIG = Config.model_validate({"base_url": "https://hangingcontext.com",
                                "title": "Hanging Context"})
Validator = jsonschema.Draft202012Validator
STORY = Validator(story_schema(CONFIG), format_checker=Validator.FORMAT_CHECKER)
WITHDRAWAL = Validator(withdrawal_schema(CONFIG), format_checker=Validator.FORMAT_CHECKER)
PAGE = Validator(page_schema(CONFIG), format_checker=Validator.FORMAT_CHECKER)
CHECK_JSONSCHEMA = str(Path(sys.executable).parent / "check-jsonschema")
# The rules UNSAID names that concern one story's fields together (the others need other
# stories, files, or JSON that a validator never sees).
ACROSS_FIELDS = {"unknown-manifest", "cited-ids-mismatch", "edition-gap"}


def schema_says(validator: jsonschema.Validator, doc: Any) -> bool:
    """True when the schema admits doc."""
    return bool(validator.is_valid(doc))


def desk_errors(doc: Any) -> list[Finding]:
    """The errors `desk check` reports of doc as a story file on its own."""
    findings: list[Finding] = []
    raw = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    data = parse_json(raw, "story.json", findings)
    if data is not None:
        story = validate_story(data, "story.json", findings)
        if story is not None:
            findings += check_story("story.json", story, CONFIG)
    return [f for f in findings if f.is_error]


# Pointers of the values desk reads as datetimes and dates.
_DATETIMES = re.compile(r"^/(published_at|corrections/\d+/at|review/at|withdrawn_at)$")
_DATES = re.compile(r"^/manifests/\d+/published_date$")
_RFC3339 = re.compile(patterns.DATETIME["pattern"])
_DATETIME = TypeAdapter(UtcDatetime)
_DATE = TypeAdapter(IsoDate)


def canonical(value: Any, pointer: str = "") -> Any:
    """doc with desk's documented leniencies undone: control characters removed from
    text (desk does so with a warning), and datetimes and dates spelt otherwise than
    RFC 3339 that desk reads put as RFC 3339."""
    if isinstance(value, dict):
        return {clean_text(k): canonical(v, f"{pointer}/{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [canonical(v, f"{pointer}/{i}") for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value
    text = clean_text(value)
    if _DATETIMES.match(pointer) and not _RFC3339.match(text):
        try:
            return _DATETIME.validate_python(text).isoformat().replace("+00:00", "Z")
        except ValidationError:
            return text
    if _DATES.match(pointer):
        try:
            return _DATE.validate_python(text).isoformat()
        except ValidationError:
            return text
    return text


def assert_agree(doc: Any) -> None:
    errors = desk_errors(doc)
    said = [f for f in errors if f.code not in ACROSS_FIELDS]
    admitted = schema_says(STORY, canonical(doc))
    assert admitted == (not said), (
        f"schema {'admits' if admitted else 'refuses'} what desk "
        f"{'refuses: ' + '; '.join(f.format() for f in said) if said else 'admits'}\n"
        + "\n".join(f"  {e.json_path}: {e.message[:200]}"
                    for e in STORY.iter_errors(canonical(doc))))


# -- generated stories -----------------------------------------------------------------

def pointers(value: Any, pointer: str = "") -> Iterator[str]:
    """Every JSON pointer below value (not value's own), its keys escaped (RFC 6901: a
    generated key may hold "/" or "~")."""
    items = (value.items() if isinstance(value, dict)
             else enumerate(value) if isinstance(value, list) else ())
    for key, item in items:
        child = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
        yield child
        yield from pointers(item, child)


def parent_of(doc: Any, pointer: str) -> tuple[Any, str | int]:
    *path, last = (part.replace("~1", "/").replace("~0", "~")
                   for part in pointer.split("/")[1:])
    node = doc
    for part in path:
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node, (int(last) if isinstance(node, list) else last)


def put(doc: Any, pointer: str, value: Any) -> None:
    node, key = parent_of(doc, pointer)
    node[key] = value


def _models(model: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """Every model below model's fields."""
    for field in model.model_fields.values():
        for inner in _classes(field.annotation):
            if issubclass(inner, BaseModel):
                yield inner
                yield from _models(inner)


def _classes(annotation: Any) -> Iterator[type]:
    if isinstance(annotation, type):
        yield annotation
    for arg in get_args(annotation):
        yield from _classes(arg)


# Every key some model knows, by its name and by its alias.
KNOWN_KEYS = {key for model in (Story, *_models(Story))
              for name, field in model.model_fields.items() for key in (name, field.alias)
              if key}

WHOLE_FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not f.is_integer())
TEXT = st.text(max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63), WHOLE_FLOATS, TEXT)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)
# Control characters desk removes from text (with a warning) before checking it.
CONTROLS = st.sampled_from(["\x00", "\x01", "\x08", "\x0b", "\x1f", "\x7f", "\x85", "\x9f",
                            "\ufdd0", "\uffff"])

SEGMENTS = st.one_of(
    st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True),
    st.text(alphabet="abzAZ09-_ .\n/é", max_size=12),
    st.sampled_from(["", "-a", "a-", "a--b", "a\n", "A", "a b", "a_b", "é", "a" * 300,
                     "-".join(["ab"] * 150)]),
)


@st.composite
def editions(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(["2026-11-14", "2026-11-14T12\n", "2026-11-14t12",
                                     "2026-11-14T1", "2026-11-14T12:00", " 2026-11-14T12",
                                     "26-11-14T12", "2026-11-14 12"]))
    year = draw(st.sampled_from([0, 1, 4, 100, 400, 1900, 2000, 2024, 2026, 9999]))
    return (f"{year:04d}-{draw(st.integers(0, 13)):02d}-{draw(st.integers(0, 32)):02d}"
            f"T{draw(st.integers(0, 25)):02d}")


@st.composite
def datetimes(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.one_of(st.integers(0, 2_000_000_000), st.integers(0, 2_000_000_000)
                              .map(str), st.sampled_from(["", "now", "2026-11-14"])))
    year = draw(st.sampled_from([0, 1, 2024, 2026, 9999]))
    month, day = draw(st.integers(0, 13)), draw(st.integers(0, 32))
    hour, minute, second = draw(st.integers(0, 25)), draw(st.integers(0, 61)), \
        draw(st.integers(0, 61))
    sep = draw(st.sampled_from(["T", "T", "t", " ", "_", "x"]))
    seconds = draw(st.sampled_from([f":{second:02d}", f":{second:02d}", ""]))
    fraction = draw(st.sampled_from(["", "", ".5", ".123456789", "."])) if seconds else ""
    offset = draw(st.sampled_from(["Z", "Z", "z", "+02:00", "-00:00", "+0200", "+02",
                                   "+24:00", "+23:59", "", " Z", "UTC"]))
    return (f"{year:04d}-{month:02d}-{day:02d}{sep}{hour:02d}:{minute:02d}{seconds}"
            f"{fraction}{offset}")


URL_POINTERS = re.compile(r"^/(url|links/\w+|manifests/\d+/source_url|related/\d+/url|"
                          r"review/url|sponsor/cta/url|reuse/\w+_url|"
                          r"run_these_manifests/(mcp|connect)_url)$")


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["https", "http", "HTTP", "hTTps", "ftp", "", "javascript",
                                   "https "]))
    sep = draw(st.sampled_from(["://", "://", ":/", ":", "//", ":///"]))
    # No brackets (an IPv6 host: desk reads it, the schema does not) and no character
    # that NFKC makes a delimiter (desk refuses it, the schema cannot tell).
    host = draw(st.text(alphabet="abz09.-_@:üé ?#/", max_size=10))
    rest = draw(st.text(alphabet="a/?#=&%[]\"'<>` \t\n\u3000\xa0\u2028\x85", max_size=8))
    return scheme + sep + host + rest


IMAGE_URLS = st.one_of(
    urls(),
    st.builds(lambda parts: "/".join(parts), st.lists(
        st.text(alphabet="aZ09._- :\\é", max_size=6), min_size=1, max_size=4)),
    st.builds(lambda parts: "media/" + "/".join(parts), st.lists(
        st.text(alphabet="aZ09._-", min_size=0, max_size=6), min_size=1, max_size=3)),
    st.sampled_from(["media/a.jpg", "media/2026-11-14/rack.jpg", "media/.a.jpg",
                     "media/../a.jpg", "media/", "media", "Media/a.jpg", "media//a.jpg",
                     "./media/a.jpg", "/media/a.jpg", "media/a.jpg\n", "media/a b.jpg"]),
)

# Values that sit just beside a rule.
NEAR_MISSES = [
    ("/schema", "hangingcontext.desk/2"), ("/type", "Story"), ("/id", 1584), ("/id", ""),
    ("/headline", None), ("/sections", []), ("/sections", None), ("/labels", None),
    ("/decision_card", None), ("/source_count", 3.5), ("/source_count", True),
    ("/source_count", None), ("/key_facts/0/self_reported", "true"),
    ("/key_facts/0/cites/0/claim_ids", []), ("/key_facts/0/cites/0/claim_ids", [1]),
    ("/sections/0/paragraphs/0/cites/0/claim_ids", []), ("/$schema", 5),
    ("/$schema", "https://hangingcontext.com/schema/desk-1.json"), ("/$schema", ""),
    ("/review", {"by": "", "at": "2026-11-14T13:00:00Z"}),
    ("/review", {"by": "Ada", "at": "2026-11-14T13:00:00Z", "url": None}),
    ("/review", {"by": "Ada"}), ("/review", {"by": 5, "at": "2026-11-14T13:00:00Z"}),
    ("/corrections", [{"at": "2026-11-14T13:00:00Z", "text": "x", "kind": "Correction"}]),
    ("/corrections", [{"at": "2026-11-14T13:00:00Z", "text": "x", "kind": None}]),
    ("/corrections", [{"at": "2026-11-14T13:00:00Z"}]),
    ("/images", [{"url": "media/a.jpg", "width": 3.5}]),
    ("/images", [{"url": "media/a.jpg", "width": None, "height": 10}]),
    ("/run_these_manifests", {"request": {"headers": {"a": 1}}}),
    ("/run_these_manifests", {"commands": {"curl": "x"}, "steps": [{"n": "1"}]}),
    ("/writer", {"agent": ""}), ("/writer", {"agent": "Muse"}), ("/beat", ""),
    ("/links", {"json": "https://hangingcontext.com/x/index.json"}),
    ("/links", {"json": "x"}), ("/related", [{"headline": "no url"}]),
    ("/sponsor", {"cta": {"label": "x"}}),
]


SEED = seed()
VALID_SEGMENTS = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True)
KINDS = st.sampled_from([None, *CHANGE_KINDS])
OPTIONAL = ("$schema", "beat", "writer", "review", "corrections", "images", "related",
            "decision_card")
SOME_OPTIONAL = st.sets(st.sampled_from(OPTIONAL))


@st.composite
def stories(draw: st.DrawFn) -> dict[str, Any]:
    """A valid story: the seed, or a generated one with some of the optional blocks."""
    if draw(st.integers(0, 4)) == 0:
        return copy.deepcopy(SEED)
    doc = make_story(draw(st.integers(0, 500)))
    when = datetime.fromisoformat(doc["published_at"]).astimezone(UTC)
    later = (when + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for key in sorted(draw(SOME_OPTIONAL)):
        doc[key] = _optional(draw, key, later)
    return doc


def _optional(draw: st.DrawFn, key: str, later: str) -> Any:
    """A valid value of an optional key."""
    if key == "$schema":
        return "https://hangingcontext.com/schema/desk-1.json"
    if key == "beat":
        return draw(VALID_SEGMENTS)
    if key == "writer":
        return {"agent": draw(VALID_SEGMENTS), "run_id": "r1"}
    if key == "review":
        review = {"by": "The desk's editor", "at": later}
        return review | ({"url": "https://hangingcontext.com/about/"} if draw(st.booleans())
                         else {})
    if key == "corrections":
        kind = draw(KINDS)
        return [{"at": later, "text": "Fixed a figure."} | ({"kind": kind} if kind else {})]
    if key == "images":
        url = "media/2026-11-14/rack.jpg" if draw(st.booleans()) else "https://img.example/a.jpg"
        return [{"url": url, "alt": "A rack.", "credit": "Desk", "width": 1200, "height": 800}]
    if key == "related":
        return [{"url": "https://hangingcontext.com/stories/2026-11-14/x/", "headline": "X"}]
    return {"useful_for": ["Readers"]}


def pick(draw: st.DrawFn, items: list[Any]) -> Any:
    """One of items (a list made for one example: an index is cheaper to draw)."""
    return items[draw(st.integers(0, len(items) - 1))]


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A story broken (or not) in up to two of the ways the loader knows."""
    doc = draw(stories())
    for _ in range(draw(st.integers(0, 2))):
        draw(MUTATION)(draw, doc)
    return doc


def _drop(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    keyed = [p for p in pointers(doc) if isinstance(parent_of(doc, p)[0], dict)]
    node, key = parent_of(doc, pick(draw, keyed))
    del node[key]


def _replace(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    put(doc, pick(draw, list(pointers(doc))), draw(JSON_VALUES))


def _segment(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    where = draw(SEGMENT_PLACES)
    if where == "/writer/agent" and not isinstance(doc.get("writer"), dict):
        doc["writer"] = {}
    put(doc, where, draw(SEGMENTS))


def _edition(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    doc["edition"] = draw(EDITIONS)


def _datetime(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    doc.setdefault("review", {"by": "Ada", "at": "2026-11-14T13:00:00Z"})
    doc["corrections"] = [{"at": "2026-11-14T13:00:00Z", "text": "x"}]
    put(doc, draw(DATETIME_PLACES), draw(DATETIMES))


def _date(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    value = draw(DATES)
    doc["manifests"][0]["published_date"] = value


def _url(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    doc.setdefault("review", {"by": "Ada", "at": "2026-11-14T13:00:00Z"})
    doc.setdefault("links", {})
    places = [p for p in pointers(doc) if URL_POINTERS.match(p)] + ["/review/url",
                                                                     "/links/json"]
    put(doc, pick(draw, places), draw(URLS))


def _image(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    doc["images"] = [{"url": draw(IMAGE_URLS), "alt": "a", "credit": "b"}]


def _unknown(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    objects = [""] + [p for p in pointers(doc)
                      if isinstance(parent_of(doc, p)[0][parent_of(doc, p)[1]], dict)]
    where = pick(draw, objects)
    node = doc if where == "" else parent_of(doc, where)[0][parent_of(doc, where)[1]]
    node[draw(UNKNOWN_KEYS)] = draw(JSON_VALUES)


def _control(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    texts = [p for p in pointers(doc) if isinstance(parent_of(doc, p)[0][
        parent_of(doc, p)[1]], str)]
    node, key = parent_of(doc, pick(draw, texts))
    text = node[key]
    at = draw(st.integers(0, len(text)))
    node[key] = text[:at] + draw(CONTROLS) + text[at:]


def _near_miss(draw: st.DrawFn, doc: dict[str, Any]) -> None:
    where, value = draw(NEAR_MISS)
    put(doc, where, copy.deepcopy(value))


EDITIONS = editions()
DATETIMES = datetimes()
DATETIME_PLACES = st.sampled_from(["/published_at", "/review/at", "/corrections/0/at"])
DATES = st.one_of(DATETIMES, st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True))
URLS = urls()
NEAR_MISS = st.sampled_from(NEAR_MISSES)
UNKNOWN_KEYS = TEXT.filter(lambda k: k not in KNOWN_KEYS)
SEGMENT_PLACES = st.sampled_from(["/slug", "/newsroom", "/beat", "/writer/agent"])
MUTATIONS = [_drop, _replace, _segment, _edition, _datetime, _date, _url, _image, _unknown,
             _control, _near_miss]


MUTATION = st.sampled_from(MUTATIONS)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_the_schema_refuses_exactly_what_desk_refuses(doc: dict[str, Any]) -> None:
    assert_agree(doc)


@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda m: m.__name__.strip("_"))
@settings(max_examples=max(EXAMPLES // 10, 20), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_each_way_of_breaking_a_story_is_judged_alike(mutate: Any, data: st.DataObject) -> None:
    doc = data.draw(stories())
    mutate(data.draw, doc)
    assert_agree(doc)


# -- what the schema cannot say --------------------------------------------------------

def _two(content: Path, **second: Any) -> list[Path]:
    first = make_story(1)
    return [write_story(content, first, "first.json"),
            write_story(content, make_story(2, **second), "second.json")]


def _one(content: Path, raw: bytes | None = None, **overrides: Any) -> list[Path]:
    path = write_story(content, make_story(1, **overrides), "story.json")
    if raw is not None:
        path.write_bytes(raw)
    return [path]


def _deep(levels: int) -> Any:
    value: Any = []
    for _ in range(levels):
        value = [value]
    return value


_STORY = make_story(1)
_FACTS = copy.deepcopy(_STORY["key_facts"])
_FACTS[0]["cites"][0]["manifest_id"] = "not-listed"
# A file desk check refuses for each rule UNSAID names, that the schema admits.
DEMONSTRATIONS: dict[str, Callable[[Path], list[Path]]] = {
    "unknown-manifest": lambda c: _one(c, key_facts=_FACTS),
    "cited-ids-mismatch": lambda c: _one(c, cited_manifest_ids=_STORY["cited_manifest_ids"][:1]),
    "edition-gap": lambda c: _one(c, edition="2026-11-20T12"),
    "duplicate-id": lambda c: _two(c, id=_STORY["id"]),
    "duplicate-url": lambda c: _two(c, slug=_STORY["slug"]),
    "image-missing": lambda c: _one(c, images=[{"url": "media/none.jpg", "alt": "a",
                                                "credit": "b"}]),
    "whole numbers": lambda c: _one(c, source_count=2.0),
    "NFKC": lambda c: _one(c, related=[{"url": "https://a\uff03b.example/"}]),
    "too-deep": lambda c: _one(c, deep=_deep(70)),
    "invalid-json": lambda c: _one(c, raw=json.dumps(make_story(1, extra=float("nan")))
                                   .encode()),
    "invalid-text": lambda c: _one(c, raw=json.dumps(make_story(1, headline="\ud800"))
                                   .encode()),
}


def _demonstrated(code: str, rule: str) -> str:
    return next(key for key in DEMONSTRATIONS if key == code or key in rule)


def _levels(node: dict[str, Any], defs: dict[str, Any], path: tuple[str, ...] = ()) -> int:
    """The most arrays and objects a value of this JSON Schema nests, itself included."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        assert name not in path, f"{name} may hold itself: no bound"
        return _levels(defs[name], defs, (*path, name))
    if node.get("type") in ("object", "array"):
        children = [*node.get("properties", {}).values(), *node.get("prefixItems", ()),
                    *(node[k] for k in ("items", "additionalProperties")
                      if isinstance(node.get(k), dict))]
        return 1 + max((_levels(c, defs, path) for c in children), default=0)
    return max((_levels(o, defs, path) for k in ("anyOf", "oneOf", "allOf")
                for o in node.get(k, ())), default=0)


def test_a_story_with_no_unknown_keys_nests_within_the_limit() -> None:
    # validate_story walks a story's nesting only when it has unknown keys or is not
    # valid: a valid story without them nests as its models do, which must stay bounded.
    schema = Story.model_json_schema(mode="validation")
    assert 3 <= _levels(schema, schema["$defs"]) <= MAX_NESTING
    deep = make_story(1, key_facts=[{**make_story(1)["key_facts"][0], "note": _deep(70)}])
    findings: list[Finding] = []
    assert validate_story(deep, "story.json", findings) is None
    # The first array deeper than the limit: the story, key_facts, a fact, its note, ...
    too_deep = "/key_facts/0/note" + "/0" * (MAX_NESTING - 2)
    assert [(f.code, f.pointer) for f in findings] == [("too-deep", too_deep)]


def test_every_unsaid_rule_is_demonstrated() -> None:
    assert sorted(_demonstrated(code, rule) for code, rule in UNSAID) == sorted(DEMONSTRATIONS)
    description = story_schema(CONFIG)["description"]
    for code, rule in UNSAID:
        assert f"{rule} ({code})" in description


@pytest.mark.parametrize(("code", "rule"), UNSAID, ids=[rule[:40] for _, rule in UNSAID])
def test_what_the_schema_cannot_say_desk_check_refuses(code: str, rule: str, content: Path,
                                                       desk: Any) -> None:
    files = DEMONSTRATIONS[_demonstrated(code, rule)](content)
    for path in files:  # Python's parser reads NaN and lone surrogates, as validators do
        assert STORY.is_valid(json.loads(path.read_bytes())), path
    result = desk("check", "--content", str(content), "--format", "json")
    found = {(f["code"], f["severity"]) for f in json.loads(result.stdout)}
    assert (code, "error") in found, found
    assert result.exit_code == 1


def test_the_schema_is_stricter_than_desk_only_where_it_says() -> None:
    """Datetimes spelt otherwise than RFC 3339 and IPv6 hosts: desk reads them, the
    schema (as its description says) does not."""
    noon = int(datetime(2026, 11, 14, 12, tzinfo=UTC).timestamp())
    for published in ("2026-11-14 12:00:00Z", "2026-11-14T12:00Z", "2026-11-14T12:00:00+0000",
                      str(noon)):
        doc = make_story(1) | {"published_at": published}
        assert desk_errors(doc) == [], published
        assert not STORY.is_valid(doc)
        assert STORY.is_valid(canonical(doc))
    doc = make_story(1, related=[{"url": "https://[2001:db8::1]/a"}])
    assert desk_errors(doc) == [] and not STORY.is_valid(doc)
    # An edition in another script's digits: both refuse it (desk check crashed on it).
    doc = make_story(1, edition="\u0662\u0660\u0662\u0666-\u0661\u0661-\u0661\u0664T\u0661\u0662")
    assert [f.code for f in desk_errors(doc)] == ["invalid-segment"]
    assert_agree(doc)
    assert "RFC 3339" in story_schema(CONFIG)["description"]
    assert "IPv6" in story_schema(CONFIG)["description"]


# -- the schema's regular expressions mean the same to ECMA-262 ------------------------

def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("pattern"), str):
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


PATTERNS = sorted({p for schema in (story_schema(CONFIG), withdrawal_schema(CONFIG),
                                    page_schema(CONFIG)) for p in _patterns(schema)})
TRICKY = st.text(alphabet=st.sampled_from(list(
    "az09AZ-_./:?#@[]<>\"'` \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000\ufeffT+Z٢é")),
    max_size=30)


@settings(max_examples=EXAMPLES, deadline=None)
@given(text=st.one_of(TRICKY, DATETIMES.filter(lambda d: isinstance(d, str)), EDITIONS, URLS,
                      IMAGE_URLS, SEGMENTS),
       end=st.sampled_from(["", "\n", "\r", " "]))
def test_each_pattern_means_the_same_to_python_and_ecma(text: str, end: str) -> None:
    value = text + end
    for pattern in PATTERNS:
        ecma = regress.Regex(pattern).find(value) is not None
        assert (re.search(pattern, value) is not None) == ecma, (pattern, value)


# -- withdrawals and pages -------------------------------------------------------------

REASONS = st.one_of(
    st.text(max_size=20),
    st.builds(lambda words, gap, pad: pad + gap.join(words) + pad,
              st.lists(st.text(alphabet="ab", min_size=1, max_size=60), min_size=1,
                       max_size=60),
              st.sampled_from([" ", "  ", "\n\t", "\u3000"]), st.sampled_from(["", " \n"])),
    st.integers(494, 506).map(lambda n: "x" * n),
    st.integers(240, 260).map(lambda n: "a  " * n),
)


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.fixed_dictionaries(
    {"id": st.one_of(st.just("1584"), st.just(""), st.integers(0, 9))},
    optional={"withdrawn_at": st.one_of(DATETIMES, st.just("2026-11-16T09:30:00Z")),
              "reason": REASONS, "note": TEXT}))
def test_the_withdrawal_schema_refuses_exactly_what_desk_refuses(
        doc: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    findings: list[Finding] = []
    loaded = load_withdrawal_file(path, findings)
    assert (loaded is None) == any(f.is_error for f in findings)
    assert schema_says(WITHDRAWAL, canonical(doc)) == (loaded is not None), findings


def test_the_withdrawal_schema_is_the_model_s() -> None:
    schema = withdrawal_schema(CONFIG)
    assert set(schema["properties"]) == set(Withdrawal.model_fields)
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["id", "reason", "withdrawn_at"]


FRONT_TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30)


@settings(max_examples=EXAMPLES, deadline=None)
@given(fields=st.fixed_dictionaries({}, optional={
    "title": st.one_of(FRONT_TEXT, st.integers(195, 205).map(lambda n: "t" * n)),
    "description": st.one_of(FRONT_TEXT, st.integers(495, 505).map(lambda n: "d" * n)),
    "nav": st.integers(-10**6, 10**7),
    "policy": st.one_of(st.sampled_from(POLICY_KINDS), FRONT_TEXT),
}))
def test_the_page_schema_refuses_exactly_what_the_front_matter_parser_refuses(
        fields: dict[str, Any]) -> None:
    # Each value written as desk reads it: text as a JSON string, nav as a number.
    lines = [f"{key}: {value if key == 'nav' else json.dumps(value)}"
             for key, value in fields.items()]
    problems: list[tuple[int, str, str]] = []
    parsed, _ = front_matter(clean_text("---\n" + "\n".join(lines) + "\n---\nBody\n"),
                             lambda *p: problems.append(p))
    assert (parsed is None) == bool(problems)
    # JSON strings escape every character desk would remove from the file: the values
    # reach the checks as they are.
    assert schema_says(PAGE, fields) == (parsed is not None), problems


# -- the stories desk and its tests hold, published -------------------------------------

STARTER = REPO / "desk" / "starter" / "story.json"
SHIPPED_STORIES = sorted({STARTER, REPO / "content" / "stories" / "2026-11-14" /
                          "inference-throughput-race-kimi-deepseek.json",
                          *(p for p in (REPO / "tests").rglob("*.json")
                            if json.loads(p.read_bytes()).get("schema") == SCHEMA_NAME)})


def check_jsonschema(schema: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema, with its ECMA-262 regular expressions and format checks."""
    return subprocess.run([CHECK_JSONSCHEMA, "--schemafile", str(schema), *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_the_seed_the_starter_and_the_golden_stories_validate(tmp_path: Path) -> None:
    assert len(SHIPPED_STORIES) >= 4  # the seed, the starter, two goldens
    for path in SHIPPED_STORIES:
        errors = [e.message for e in STORY.iter_errors(json.loads(path.read_bytes()))]
        assert errors == [], path
    schema = tmp_path / "desk-1.json"
    schema.write_bytes(encode(story_schema(CONFIG)))
    made = tmp_path / "made"
    made.mkdir()
    generated = [make_story(n) for n in range(5)] + [published(make_story(7))]
    for n, doc in enumerate(generated):
        (made / f"{n}.json").write_text(json.dumps(doc), encoding="utf-8")
    result = check_jsonschema(schema, *SHIPPED_STORIES, *sorted(made.iterdir()))
    assert result.returncode == 0, result.stdout + result.stderr


def published(doc: dict[str, Any]) -> dict[str, Any]:
    """doc as index.json publishes it."""
    story = Story.model_validate(doc)
    return json.loads(story_json(story, CONFIG, doc))


def test_a_build_publishes_the_schemas_and_every_index_json_follows_one(
        tmp_path: Path, desk: Any) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, seed())
    for n in range(3):
        write_story(content, make_story(n, **{"$schema": "https://hangingcontext.com/schema/"
                                              "desk-1.json"}))
    write_story(content, make_story(5, review={"by": "The editor", "at": "2026-11-14T14:00:00Z"},
                                    corrections=[{"at": "2026-11-14T15:00:00Z", "text": "x",
                                                  "kind": "clarification"}]))
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW_BUILD,
                  "--no-search")
    assert result.exit_code == 0, result.stderr
    for path, kind in ((STORY_PATH, "story"), (WITHDRAWAL_PATH, "withdrawal"),
                       (PAGE_PATH, "page")):
        published_bytes = (out / path.lstrip("/")).read_bytes()
        printed = desk("schema", "--kind", kind)
        assert printed.exit_code == 0 and printed.stdout.encode() == published_bytes
        schema = json.loads(published_bytes)
        Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == "https://hangingcontext.com" + path
    llms = (out / "llms.txt").read_text(encoding="utf-8")
    assert "https://hangingcontext.com/schema/desk-1.json" in llms
    terms = (out / "terms" / "reuse" / "index.html").read_text(encoding="utf-8")
    assert 'href="/schema/desk-1.json"' in terms
    index_files = sorted((out / "stories").rglob("index.json"))
    assert len(index_files) == 5
    result_check = check_jsonschema(out / STORY_PATH.lstrip("/"), *index_files)
    assert result_check.returncode == 0, result_check.stdout + result_check.stderr


def test_desk_schema_puts_its_id_under_the_base_url(desk: Any) -> None:
    printed = desk("schema", "--base-url", "https://news.example.org/desk")
    assert printed.exit_code == 0, printed.stderr
    schema = json.loads(printed.stdout)
    assert schema["$id"] == "https://news.example.org/desk/schema/desk-1.json"
    assert schema["properties"]["schema"]["const"] == SCHEMA_NAME
    assert schema["properties"]["$schema"]["type"] == "string"
    assert desk("schema", "--kind", "poster").exit_code == 2


def test_a_story_may_name_its_schema_without_a_warning(content: Path, desk: Any) -> None:
    doc = make_story(1)
    doc = {"$schema": "https://hangingcontext.com/schema/desk-1.json", **doc}
    write_story(content, doc)
    result = desk("check", "--content", str(content), "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout) == []
    bad = {**doc, "$schema": 1}
    write_story(content, bad)
    found = json.loads(desk("check", "--content", str(content), "--format", "json").stdout)
    assert [(f["pointer"], f["code"]) for f in found] == [("/$schema", "invalid-value")]


def _glob(pattern: str) -> re.Pattern[str]:
    """A VS Code fileMatch glob as a regular expression ('**/' any folders, '*' a name)."""
    parts = re.split(r"(\*\*/|\*)", pattern)
    return re.compile("".join("(?:[^/]+/)*" if p == "**/" else "[^/]*" if p == "*"
                              else re.escape(p) for p in parts))


def test_init_maps_the_content_files_to_the_published_schemas(tmp_path: Path) -> None:
    site = tmp_path / "site"
    scaffold(site, "https://news.example.org")
    settings_file = json.loads((site / EDITOR_SETTINGS).read_bytes())
    mapping = {entry["url"]: entry["fileMatch"] for entry in settings_file["json.schemas"]}
    config = Config.model_validate({"base_url": "https://news.example.org"})
    assert set(mapping) == {story_schema(config)["$id"], withdrawal_schema(config)["$id"]}
    stories_globs = [_glob(g) for g in mapping[story_schema(config)["$id"]]]
    withdrawal_globs = [_glob(g) for g in mapping[withdrawal_schema(config)["$id"]]]
    for path, globs, others in (
            (EXAMPLE_STORY, stories_globs, withdrawal_globs),
            ("content/drafts/2026-11-15/next.json", stories_globs, withdrawal_globs),
            ("content/stories/a.json", stories_globs, withdrawal_globs),
            ("content/withdrawn/1584.json", withdrawal_globs, stories_globs)):
        assert any(g.fullmatch(path) for g in globs), path
        assert not any(g.fullmatch(path) for g in others), path
    assert not any(g.fullmatch("content/pages/about.json") for g in stories_globs)
    story = json.loads((site / EXAMPLE_STORY).read_bytes())
    assert Validator(story_schema(config)).is_valid(story)


# -- docs/content.md says what the schema says ------------------------------------------

DOCS = REPO / "docs" / "content.md"
BLOCKS = {"unsaid": unsaid_rules, "fields": lambda: field_table(CONFIG)}


def test_docs_list_every_key_and_every_unsaid_rule() -> None:
    """The generated blocks of docs/content.md are the schema's (DESK_UPDATE_GOLDEN=1, as
    `make golden` sets it, rewrites them)."""
    text = DOCS.read_text(encoding="utf-8")
    wanted = text
    for name, make in BLOCKS.items():
        block = re.compile(rf"(<!-- {name}: [^\n]*-->\n)(.*?)(<!-- end of {name} -->)",
                           re.DOTALL)
        assert block.search(wanted), name
        made = make()
        wanted = block.sub(lambda m: m.group(1) + made + m.group(3), wanted)  # noqa: B023
    if os.environ.get("DESK_UPDATE_GOLDEN") and wanted != text:
        DOCS.write_text(wanted, encoding="utf-8")
        text = wanted
    assert text == wanted, "docs/content.md differs from the schema: run `make golden`"
    for name, field in Story.model_fields.items():
        assert f"| `{field.alias or name}` |" in text, name
