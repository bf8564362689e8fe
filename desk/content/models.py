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
from functools import cache
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
)

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


UtcDatetime = Annotated[AwareDatetime, BeforeValidator(_require_text), AfterValidator(_to_utc)]
IsoDate = Annotated[date, BeforeValidator(_require_text)]
HttpUrl = Annotated[str, AfterValidator(check_url)]
Segment = Annotated[str, AfterValidator(check_segment)]
Edition = Annotated[str, AfterValidator(check_edition)]
# A segment that may be left empty (a story with no beat, a writer with no agent).
MaybeSegment = Annotated[str, AfterValidator(lambda v: check_segment(v) if v else v)]


class DeskModel(BaseModel):
    """Base of every story model: frozen, keeps unknown keys."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    def __eq__(self, other: object) -> bool:
        # Equal content is equal whatever order the keys were written in.
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.__dict__ == other.__dict__
            and self.__pydantic_extra__ == other.__pydantic_extra__
        )

    def __hash__(self) -> int:
        # Consistent with __eq__ (key order does not count); desk itself never hashes models.
        return hash((type(self).__name__, self.model_dump_json()))

    def has_unknown_keys(self) -> bool:
        """True when this model or one below it kept an unknown key (a quick test: only
        the fields whose type may hold models are looked into)."""
        if self.__pydantic_extra__:
            return True
        values = self.__dict__
        return any(_has_unknown(values[name]) for name in _model_fields(type(self)))

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


def _has_unknown(value: Any) -> bool:
    if isinstance(value, DeskModel):
        return value.has_unknown_keys()
    if type(value) is tuple:  # a loop, not any(): this runs for every model of every story
        for item in value:
            if type(item) is not str and _has_unknown(item):
                return True
    return False


@cache
def _model_fields(model: type[DeskModel]) -> tuple[str, ...]:
    """The fields of a model class whose type may hold a model (the rest hold text,
    numbers and dates, where no unknown key can be)."""
    return tuple(name for name, info in model.model_fields.items()
                 if _may_hold_model(info.annotation))


def _may_hold_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_may_hold_model(arg) for arg in get_args(annotation))


def _unknown_in(value: Any, pointer: str) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    if isinstance(value, DeskModel):
        yield from value.unknown_keys(pointer)
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _unknown_in(item, f"{pointer}/{i}")


class Labels(DeskModel):
    trust: str = ""
    trust_text: str = ""
    newsroom: str = ""


class Cite(DeskModel):
    claim_ids: tuple[str, ...] = ()
    manifest_id: str


class KeyFact(DeskModel):
    text: str
    cites: tuple[Cite, ...] = ()
    self_reported: StrictBool = False


class Image(DeskModel):
    url: Annotated[str, AfterValidator(check_image_url)]
    alt: str = ""
    caption: str = ""
    credit: str = ""
    width: StrictInt | None = None
    height: StrictInt | None = None


class Paragraph(DeskModel):
    cites: tuple[Cite, ...] = ()
    markdown: str


class Section(DeskModel):
    heading: str = ""
    paragraphs: tuple[Paragraph, ...] = ()


class DecisionCard(DeskModel):
    not_for: tuple[str, ...] = ()
    useful_for: tuple[str, ...] = ()
    compare_against: tuple[str, ...] = ()


class Writer(DeskModel):
    agent: MaybeSegment = ""  # the path segment of its agent page
    run_id: str = ""


# The kinds of change a published story records. A record written before kinds existed
# has none and reads as a correction, so older files keep their meaning.
ChangeKind = Literal["correction", "clarification", "update", "editors-note"]
CHANGE_KINDS: tuple[str, ...] = get_args(ChangeKind)


class Correction(DeskModel):
    """One change to a published story: what changed, when, and of which kind."""

    at: UtcDatetime
    text: str
    kind: ChangeKind = "correction"


class Review(DeskModel):
    """The human review a story went through: who holds editorial responsibility, and when."""

    by: Annotated[StrictStr, Field(min_length=1)]
    at: UtcDatetime
    url: HttpUrl | None = None  # the editor's page, e.g. an About section


class Manifest(DeskModel):
    title: str = ""
    source_url: HttpUrl | None = None
    manifest_id: str
    source_name: str = ""
    published_date: IsoDate | None = None


class Step(DeskModel):
    n: StrictInt | None = None
    title: str = ""
    text: str = ""


class Request(DeskModel):
    method: str = ""
    url_template: str = ""
    headers: dict[str, str] = Field(default_factory=dict)


class RunTheseManifests(DeskModel):
    title: str = ""
    summary: str = ""
    manifest_ids: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    mcp_url: HttpUrl | None = None
    connect_url: HttpUrl | None = None
    request: Request | None = None
    commands: dict[str, str] = Field(default_factory=dict)


class Links(DeskModel):
    html: HttpUrl | None = None
    json_: HttpUrl | None = Field(default=None, alias="json")
    markdown: HttpUrl | None = None
    newsroom: HttpUrl | None = None
    edition: HttpUrl | None = None

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
    url: HttpUrl
    headline: str = ""
    slug: str = ""


class CallToAction(DeskModel):
    label: str = ""
    url: HttpUrl


class Sponsor(DeskModel):
    label: str = ""
    title: str = ""
    text: str = ""
    cta: CallToAction | None = None
    note: str = ""


# The reuse fields that state terms (the URL fields are the layout's business).
REUSE_FIELDS = ("version", "summary", "attribution", "link_rule", "keep_ids_rule",
                "no_endorsement")


class Reuse(DeskModel):
    version: str = ""
    summary: str = ""
    attribution: str = ""
    link_rule: str = ""
    keep_ids_rule: str = ""
    no_endorsement: str = ""
    license_url: HttpUrl | None = None
    machine_url: HttpUrl | None = None
    canonical_url: HttpUrl | None = None


class Story(DeskModel):
    """One story file. Required keys are the ones without a default."""

    schema_: Literal["hangingcontext.desk/1"] = Field(alias="schema")
    type: Literal["story"]
    id: str
    slug: Segment
    edition: Edition
    url: HttpUrl | None = None
    newsroom: Segment
    beat: MaybeSegment = ""  # the path segment of its beat page
    newsroom_title: str = ""
    angle: str = ""
    headline: str
    dek: str = ""
    published_at: UtcDatetime
    labels: Labels = Field(default_factory=Labels)
    source_count: StrictInt | None = None
    publishers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    distinct_source_count: StrictInt | None = None
    key_facts: tuple[KeyFact, ...] = ()
    images: tuple[Image, ...] = ()
    sections: tuple[Section, ...]
    unresolved: tuple[str, ...] = ()
    decision_card: DecisionCard | None = None
    writer: Writer | None = None
    corrections: tuple[Correction, ...] = ()
    review: Review | None = None
    cited_manifest_ids: tuple[str, ...] = ()
    manifests: tuple[Manifest, ...] = ()
    run_these_manifests: RunTheseManifests | None = None
    links: Links | None = None
    related: tuple[Related, ...] = ()
    sponsor: Sponsor | None = None
    disclosure: str = ""
    reuse: Reuse | None = None

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

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[StrictStr, Field(min_length=1)]
    withdrawn_at: UtcDatetime
    reason: Annotated[StrictStr, AfterValidator(_short_text)]
