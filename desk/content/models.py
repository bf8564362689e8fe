"""Pydantic models for story files in schema `hangingcontext.desk/1`.

Field names are the JSON keys. Models are frozen and validated once, by the loader; the
rest of desk trusts them. Unknown keys are kept (so `index.json` loses nothing) and the
loader reports them as warnings. `order_like` puts a story's dumped data back in the key
order of the input it was validated from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from operator import eq
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)

from desk.content import patterns
from desk.content.findings import escape_pointer
from desk.content.segments import MAX_SEGMENT_BYTES, check_edition, check_segment

SCHEMA = "hangingcontext.desk/1"


def _require_text(value: Any) -> Any:
    # pydantic would read a number as a Unix timestamp; dates must be written out.
    if not isinstance(value, str | datetime | date):
        raise ValueError("must be a string in ISO 8601 form")
    return value


def _to_utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


# Whitespace (any Unicode space), control characters and quotes have no place in a URL.
_URL_FORBIDDEN = re.compile("[\\s\x00-\x1f<>\"'`]")


def check_url(value: str) -> str:
    """An absolute http(s) URL without white space, control characters or quotes."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an absolute http(s) URL")
    if _URL_FORBIDDEN.search(value):
        raise ValueError("URL contains a space, control character or quote")
    return value


# Image files of the content repository live below this folder of it, and a story names
# one by its path there: "media/2026-11-14/rack.jpg" (see desk.content.media).
MEDIA_FOLDER = "media"
_MEDIA_PATH = re.compile(r"[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)*")
_MEDIA_CHAR = re.compile(r"[A-Za-z0-9._/-]")
_MEDIA_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._/-]+")


def is_local(url: str) -> bool:
    """True when an image's url names a file of the content repository, not a URL."""
    return "://" not in url


def check_image_url(value: str) -> str:
    """An absolute http(s) URL, or the path of a file below the content's media folder
    (letters, digits, '.', '_' and '-' between slashes; no '..', nothing hidden, each name
    at most 255 bytes)."""
    if not is_local(value):
        return check_url(value)
    parts = value.split("/")
    if parts[0] != MEDIA_FOLDER or len(parts) < 2 or ".." in parts:
        raise ValueError(f"{value!r} is outside content/{MEDIA_FOLDER}/: an image is an "
                         f"absolute http(s) URL or a path like {MEDIA_FOLDER}/photo.jpg")
    problem = _media_path_problem(value, parts)
    if problem:
        raise ValueError(f"{value!r} names a file desk will not publish: {problem}")
    return value


def _media_path_problem(value: str, parts: list[str]) -> str:
    """What is wrong with a path below the media folder ('' when nothing is)."""
    if "?" in value or "#" in value:
        return ("a media path names a file, without a query or fragment (leave out "
                f"{value[min(i for i in (value.find('?'), value.find('#')) if i >= 0):]!r})")
    hidden = [part for part in parts if part.startswith(".")]
    if hidden:
        return f"{hidden[0]!r} is a hidden name (it starts with '.'); rename it"
    if "" in parts:
        return "it has an empty name between slashes"
    if not _MEDIA_PATH.fullmatch(value):
        bad = sorted({c for c in value if not _MEDIA_CHAR.fullmatch(c)})
        return (f"{', '.join(map(repr, bad))} cannot be in a media path (letters, digits, "
                "'.', '_' and '-' between slashes); rename the file, e.g. "
                f"{_MEDIA_NOT_ALLOWED.sub('-', value)}")
    long = [part for part in parts if len(part.encode()) > MAX_SEGMENT_BYTES]
    if long:
        return (f"a name in it is {len(long[0].encode()):,} bytes long; at most "
                f"{MAX_SEGMENT_BYTES} (the longest name a file system holds)")
    return ""


# Each type names the JSON Schema that says its rule (desk.content.patterns), so the
# published schema says what the loader checks.
UtcDatetime = Annotated[AwareDatetime, BeforeValidator(_require_text), AfterValidator(_to_utc),
                        WithJsonSchema(patterns.DATETIME)]
IsoDate = Annotated[date, BeforeValidator(_require_text), WithJsonSchema(patterns.DATE)]
HttpUrl = Annotated[str, AfterValidator(check_url), WithJsonSchema(patterns.URL)]
Segment = Annotated[str, AfterValidator(check_segment), WithJsonSchema(patterns.SEGMENT)]
Edition = Annotated[str, AfterValidator(check_edition), WithJsonSchema(patterns.EDITION)]
# A segment that may be left empty (a story with no beat, a writer with no agent).
MaybeSegment = Annotated[str, AfterValidator(lambda v: check_segment(v) if v else v),
                         WithJsonSchema(patterns.MAYBE_SEGMENT)]


class DeskModel(BaseModel):
    """Base of every story model: frozen, keeps unknown keys.

    A field's docstring is its description in the published JSON Schema
    (desk.content.schema) and in docs/content.md."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True,
                              use_attribute_docstrings=True)

    def __eq__(self, other: object) -> bool:
        # Equal content is equal whatever order the keys were written in, and whether
        # unknown keys were forbidden (no extras: None) or kept (none found: {}).
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {})
        )

    def __hash__(self) -> int:
        # Consistent with __eq__ (key order does not count); desk itself never hashes models.
        return hash((type(self).__name__, self.model_dump_json()))

    def unknown_keys(self, pointer: str = "") -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """Yield (JSON pointer, key, the model's known keys) for every unknown key below."""
        known = tuple(field.alias or name for name, field in type(self).model_fields.items())
        for key in self.model_extra or {}:
            yield f"{pointer}/{escape_pointer(key)}", key, known
        for name in type(self).model_fields:
            value = getattr(self, name)
            key = type(self).model_fields[name].alias or name
            yield from _unknown_in(value, f"{pointer}/{escape_pointer(key)}")


def order_like(value: Any, like: Any) -> Any:
    """Dumped data put back in the key order of the input it was validated from: keys the
    input had come in its order, keys it lacked (recomputed URLs) after them.

    Both are plain JSON data (dumped, and parsed), so exact types are tested, and only
    arrays and objects are descended into: this runs for every value of every story."""
    if type(value) is dict and type(like) is dict:
        if len(value) == len(like) and all(map(eq, value, like)):
            # Already in order (the usual case): only what is below may need reordering,
            # in place (the dumped data is this function's own).
            for key, item in value.items():
                if type(item) in _NESTED:
                    value[key] = order_like(item, like[key])
            return value
        ordered = {}
        for key in like:
            if key in value:
                item = value[key]
                ordered[key] = order_like(item, like[key]) if type(item) in _NESTED else item
        if len(ordered) != len(value):
            ordered.update((key, item) for key, item in value.items() if key not in ordered)
        return ordered
    if type(value) is list and type(like) is list and len(value) == len(like):
        for i, item in enumerate(value):
            if type(item) in _NESTED:
                value[i] = order_like(item, like[i])
        return value
    return value


_NESTED = (dict, list)


def _unknown_in(value: Any, pointer: str) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    if isinstance(value, DeskModel):
        yield from value.unknown_keys(pointer)
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _unknown_in(item, f"{pointer}/{i}")


class Labels(DeskModel):
    """The story's labels."""

    trust: str = ""
    """The trust level, e.g. confirmed."""
    trust_text: str = ""
    """The trust level in words, e.g. Confirmed · 3 Manifests."""
    newsroom: str = ""
    """The newsroom's name as a label."""


class Cite(DeskModel):
    """One citation: a manifest, and the claims of it the text rests on."""

    claim_ids: tuple[str, ...] = ()
    """The ids of the claims cited; at least one (empty-claims)."""
    manifest_id: str
    """The id of a manifest listed in /manifests (unknown-manifest)."""


class KeyFact(DeskModel):
    """One key fact of the story."""

    text: str
    """The fact, as plain text."""
    cites: tuple[Cite, ...] = ()
    """Where the fact comes from (without any: an uncited-text warning)."""
    self_reported: StrictBool = False
    """True when the fact is what its subject says of itself."""


class Image(DeskModel):
    """One picture of the story (the first is its lead)."""

    url: Annotated[str, AfterValidator(check_image_url), WithJsonSchema(patterns.IMAGE_URL)]
    """An absolute http(s) URL, or the path of a file below content/media/ written from the content
    folder (media/2026-11-14/rack.jpg), which desk publishes with its variants and crops."""
    alt: str = ""
    """What the picture shows, for readers who cannot see it (without it: an image-alt-missing
    warning)."""
    caption: str = ""
    """The caption."""
    credit: str = ""
    """Who made the picture (without it: an image-credit-missing warning)."""
    width: StrictInt | None = None
    """Width in pixels, for a URL (a file's own size is read from it)."""
    height: StrictInt | None = None
    """Height in pixels, for a URL (a file's own size is read from it)."""


class Paragraph(DeskModel):
    """One paragraph of the body, in Markdown, with its citations."""

    cites: tuple[Cite, ...] = ()
    """Where the paragraph comes from (without any: an uncited-text warning)."""
    markdown: str
    """The paragraph in Markdown (CommonMark, tables, strikethrough; raw HTML is shown as text)."""


class Section(DeskModel):
    """One section of the body: a heading and its paragraphs."""

    heading: str = ""
    """The section's heading; empty for none."""
    paragraphs: tuple[Paragraph, ...] = ()
    """The section's paragraphs, in order."""


class DecisionCard(DeskModel):
    """Who the story is for, and what to compare it with."""

    not_for: tuple[str, ...] = ()
    """Readers the story is not for."""
    useful_for: tuple[str, ...] = ()
    """Readers the story is useful for."""
    compare_against: tuple[str, ...] = ()
    """What to compare the story's subject with."""


class Writer(DeskModel):
    """The agent that wrote the story, and its run."""

    agent: MaybeSegment = ""  # the path segment of its agent page
    """The writing agent, a path segment (its page is /agents/AGENT/); empty for none."""
    run_id: str = ""
    """The id of the agent's run that wrote the story."""


# The kinds of change a published story records. A record written before kinds existed
# has none and reads as a correction, so older files keep their meaning.
ChangeKind = Literal["correction", "clarification", "update", "editors-note"]
CHANGE_KINDS: tuple[str, ...] = get_args(ChangeKind)


class Correction(DeskModel):
    """One change to a published story: what changed, when, and of which kind."""

    at: UtcDatetime
    """When the change was made, with its UTC offset."""
    text: str
    """What changed, for readers."""
    kind: ChangeKind = "correction"
    """The kind of change: correction (the default: a record without a kind is one), clarification,
    update or editors-note."""


class Review(DeskModel):
    """The human review a story went through: who holds editorial responsibility, and when."""

    by: Annotated[StrictStr, Field(min_length=1)]
    """Who reviewed the story and holds editorial responsibility for it; not empty."""
    at: UtcDatetime
    """When the review was made, with its UTC offset."""
    url: HttpUrl | None = None  # the editor's page, e.g. an About section
    """A page about the reviewer, e.g. the About page's section."""


class Manifest(DeskModel):
    """One source manifest the story cites."""

    title: str = ""
    """The source's title."""
    source_url: HttpUrl | None = None
    """Where the source was published."""
    manifest_id: str
    """The manifest's id, as the story's citations name it."""
    source_name: str = ""
    """The source's publisher."""
    published_date: IsoDate | None = None
    """When the source was published, YYYY-MM-DD."""


class Step(DeskModel):
    """One step of running the manifests again."""

    n: StrictInt | None = None
    """The step's number."""
    title: str = ""
    """The step's title."""
    text: str = ""
    """What to do."""


class Request(DeskModel):
    """The HTTP request that fetches a manifest."""

    method: str = ""
    """The HTTP method, e.g. GET."""
    url_template: str = ""
    """The URL, with a placeholder where the manifest's id goes."""
    headers: dict[str, str] = Field(default_factory=dict)
    """The request's headers, by name."""


class RunTheseManifests(DeskModel):
    """How a reader runs the cited manifests again, to check the claims."""

    title: str = ""
    """The block's title."""
    summary: str = ""
    """What running the manifests shows."""
    manifest_ids: tuple[str, ...] = ()
    """The manifests to run: the ones the story cites (else a run-manifests-mismatch warning)."""
    steps: tuple[Step, ...] = ()
    """The steps, in order."""
    mcp_url: HttpUrl | None = None
    """The MCP server to connect an agent to."""
    connect_url: HttpUrl | None = None
    """Where a reader gets access."""
    request: Request | None = None
    """The request that fetches one manifest."""
    commands: dict[str, str] = Field(default_factory=dict)
    """Commands that fetch the manifests, by tool name."""


class Links(DeskModel):
    """The story's own URLs. desk recomputes them from the layout (a differing one is a url-mismatch
    warning)."""

    html: HttpUrl | None = None
    """The story's page."""
    json_: HttpUrl | None = Field(default=None, alias="json")
    """The story's index.json."""
    markdown: HttpUrl | None = None
    """The story's index.md."""
    newsroom: HttpUrl | None = None
    """The newsroom's page."""
    edition: HttpUrl | None = None
    """The edition's page."""

    def to_pointer_map(self) -> dict[str, str | None]:
        """The links by their JSON key."""
        return {
            "html": self.html,
            "json": self.json_,
            "markdown": self.markdown,
            "newsroom": self.newsroom,
            "edition": self.edition,
        }


class Related(DeskModel):
    """A link to a related story."""

    url: HttpUrl
    """The related story's URL (one not in the content: a related-missing warning)."""
    headline: str = ""
    """Its headline."""
    slug: str = ""
    """Its slug."""


class CallToAction(DeskModel):
    """A sponsor's link."""

    label: str = ""
    """The link's text."""
    url: HttpUrl
    """Where it leads."""


class Sponsor(DeskModel):
    """A sponsor's note, or a house ad."""

    label: str = ""
    """The label above the note, e.g. From Synorb."""
    title: str = ""
    """The note's title."""
    text: str = ""
    """The note."""
    cta: CallToAction | None = None
    """The sponsor's link."""
    note: str = ""
    """A line that says what the note is."""


# The reuse fields that state terms (the URL fields are the layout's business).
REUSE_FIELDS = ("version", "summary", "attribution", "link_rule", "keep_ids_rule",
                "no_endorsement")


class Reuse(DeskModel):
    """The story's reuse terms (a term that differs from the site's is a reuse-differs warning)."""

    version: str = ""
    """The version of the terms."""
    summary: str = ""
    """The terms in a sentence or two."""
    attribution: str = ""
    """How to credit the story."""
    link_rule: str = ""
    """How to link to the story."""
    keep_ids_rule: str = ""
    """What to do with the cited manifest ids."""
    no_endorsement: str = ""
    """What reuse may not imply."""
    license_url: HttpUrl | None = None
    """The human-readable terms."""
    machine_url: HttpUrl | None = None
    """The terms in machine form (reuse.json)."""
    canonical_url: HttpUrl | None = None
    """The story's URL (recomputed from the layout)."""


class Story(DeskModel):
    """One story file. Required keys are the ones without a default."""

    # A story may name its JSON Schema, as JSON files do for editors' tools.
    json_schema: str = Field(default="", alias="$schema")
    """The URL of this JSON Schema, for editors' tools (desk does not read it)."""
    schema_: Literal["hangingcontext.desk/1"] = Field(alias="schema")
    """The format: hangingcontext.desk/1."""
    type: Literal["story"]
    """Always story."""
    id: str
    """The story's id, a string; unique in the content (duplicate-id) and kept when the story
    moves."""
    slug: Segment
    """The last segment of the story's URL, /stories/YYYY-MM-DD/SLUG/: lowercase letters, digits and
    single hyphens."""
    edition: Edition
    """The hourly edition the story belongs to, YYYY-MM-DDTHH (UTC), near published_at
    (edition-gap)."""
    url: HttpUrl | None = None
    """The story's URL; desk recomputes it from the layout (a differing one is a url-mismatch
    warning)."""
    newsroom: Segment
    """The newsroom, a path segment (its page is /n/NEWSROOM/)."""
    beat: MaybeSegment = ""  # the path segment of its beat page
    """The beat within the newsroom, a path segment; empty for none."""
    newsroom_title: str = ""
    """The newsroom's name (the newest story's wins; stories that differ get a
    newsroom-title-conflict warning)."""
    angle: str = ""
    """The story's angle, in a line."""
    headline: str
    """The headline."""
    dek: str = ""
    """The summary under the headline."""
    published_at: UtcDatetime
    """When the story is published, with its UTC offset; a later time holds the story until then."""
    labels: Labels = Field(default_factory=Labels)
    """The story's labels."""
    source_count: StrictInt | None = None
    """How many sources (the length of sources, else a source-count warning)."""
    publishers: tuple[str, ...] = ()
    """The sources' publishers."""
    sources: tuple[str, ...] = ()
    """The sources."""
    distinct_source_count: StrictInt | None = None
    """How many distinct sources (else a source-count warning)."""
    key_facts: tuple[KeyFact, ...] = ()
    """The key facts, each cited."""
    images: tuple[Image, ...] = ()
    """The pictures, in order: the first is the lead."""
    sections: tuple[Section, ...]
    """The body, in sections."""
    unresolved: tuple[str, ...] = ()
    """What the sources leave open."""
    decision_card: DecisionCard | None = None
    """Who the story is for."""
    writer: Writer | None = None
    """The agent that wrote the story."""
    corrections: tuple[Correction, ...] = ()
    """The changes made since publication: corrections, clarifications, updates and editors'
    notes."""
    review: Review | None = None
    """The human review the story went through."""
    cited_manifest_ids: tuple[str, ...] = ()
    """Every manifest the text cites, and no other (cited-ids-mismatch)."""
    manifests: tuple[Manifest, ...] = ()
    """The manifests the story cites (one never cited: an uncited-manifest warning)."""
    run_these_manifests: RunTheseManifests | None = None
    """How to run the cited manifests again."""
    links: Links | None = None
    """The story's own URLs (recomputed from the layout)."""
    related: tuple[Related, ...] = ()
    """Related stories."""
    sponsor: Sponsor | None = None
    """A sponsor's note."""
    disclosure: str = ""
    """How the story was made, for readers."""
    reuse: Reuse | None = None
    """The story's own reuse terms."""

    @property
    def modified_at(self) -> datetime:
        """The latest correction's time, or the publication time when there is none."""
        return max((c.at for c in self.corrections), default=self.published_at)

    @property
    def trust(self) -> str:
        """The trust level label ('confirmed', ...) or ''."""
        return self.labels.trust


# How long a withdrawal's public reason may be, in characters.
REASON_MAX = 500


def _short_text(value: str) -> str:
    text = " ".join(value.split())
    if not text:
        raise ValueError("must not be empty")
    if len(text) > REASON_MAX:
        raise ValueError(f"is {len(text)} characters long; at most {REASON_MAX}")
    return text


class Withdrawal(BaseModel):
    """One file of content/withdrawn/: which story is withdrawn, when, and why (public)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: Annotated[StrictStr, Field(min_length=1)]
    """The id of the withdrawn story; one that no story has, and that was never published, is an
    error (withdrawn-unknown)."""
    withdrawn_at: UtcDatetime
    """When the story was withdrawn, with its UTC offset."""
    reason: Annotated[StrictStr, AfterValidator(_short_text),
                      WithJsonSchema(patterns.short_text(REASON_MAX))]
    """Why, for readers: at most 500 characters."""
