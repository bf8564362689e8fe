"""Read story files into validated models, collecting every problem across every file.

Nothing here raises on bad content: each problem becomes a Finding, and the caller decides
what to do with them.
"""

from __future__ import annotations

import codecs
import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol, cast
from urllib.parse import urlsplit

import orjson
from pydantic import ValidationError

from desk import urls
from desk.config import Config
from desk.content.digests import search_entry
from desk.content.findings import Finding, escape_pointer
from desk.content.gitblobs import blob_id
from desk.content.models import Story, Withdrawal
from desk.content.prose import clean_text

# The folders of content/: stories (published, or held until due), drafts (shown only in
# the preview or with --drafts) and withdrawals (one file per withdrawn story).
STORIES = "stories"
DRAFTS = "drafts"
WITHDRAWN = "withdrawn"

_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters HTML and XML forbid may hide in text, raw or as escapes; these find every file
# that might hold one, so the others skip the walk below. They scan the UTF-8 bytes with
# patterns led by a literal byte, which is many times faster than one character class.
_FORBIDDEN_BYTES = (
    re.compile(rb"\\(?:[bf]|u(?:00[01789][0-9a-fA-F]|[fF][dD][dDeE][0-9a-fA-F]|[fF][fF][fF][eEfF]))"),
    re.compile(rb"\xc2[\x80-\x9f]"),  # U+0080-U+009F
    re.compile(rb"\xef(?:\xb7[\x90-\xaf]|\xbf[\xbe\xbf])"),  # U+FDD0-U+FDEF, U+FFFE/F
)


def _may_hold_forbidden(raw: bytes) -> bool:
    return b"\x7f" in raw or any(pattern.search(raw) for pattern in _FORBIDDEN_BYTES)


class Texts(NamedTuple):
    """A summary's longer texts: only the pages that show them read them."""

    slug: str
    headline: str
    dek: str
    angle: str
    trust_text: str
    run_id: str  # the writer's run (agent pages show it)
    reviewed_by: str  # who reviewed the story ("" when no person did): cards say so
    # The headline of each related link ("" for none): only the story's own page shows
    # them, where the links' URLs are read by every build (Summary.related_urls).
    related_headlines: tuple[str, ...] = ()


class TextSource(Protocol):
    """Where the texts of a summary read back from the build cache are kept."""

    def texts(self, path: str, digest: str) -> Texts:
        """The texts of the story file `path` inspected with bytes of this digest."""
        ...


@dataclass(frozen=True, slots=True)
class StoredTexts:
    """The texts of a story file, left where they are kept until a page shows them."""

    source: TextSource
    path: str
    digest: str

    def load(self) -> Texts:
        """The texts, read from their source."""
        return self.source.texts(self.path, self.digest)


class _TextField:
    """One of a summary's texts, read through `Summary.texts`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._index = Texts._fields.index(name)

    def __get__(self, summary: Summary, owner: type | None = None) -> str:
        return cast(str, summary.texts[self._index])


@dataclass(frozen=True, slots=True, eq=False)
class Summary:
    """What lists, feeds, sitemaps and the cross-story checks need of a story.

    Small on purpose: the catalog holds one per story. What groups, orders and checks
    stories is held; the longer texts (headline, dek...) may be left in the build cache
    (`StoredTexts`) and read when a page shows them, so an archive of any size fits in
    little memory. The full story is read again only to render its own pages.
    """

    id: str
    newsroom: str
    newsroom_title: str
    edition: str
    published_at: datetime
    modified_at: datetime
    trust: str
    url: str | None
    related_urls: tuple[str, ...]  # the URL of each related link (headlines: in texts)
    beat: str  # "" when it has none
    agent: str  # the writing agent, "" when it names none
    # (at, text, kind) of each change record, newest first (ChangeKind: a correction...)
    corrections: tuple[tuple[datetime, str, str], ...]
    held_texts: Texts | StoredTexts
    images: tuple[str, ...] = ()  # the url of each image, as written (a path: a local file)

    @property
    def texts(self) -> Texts:
        """The longer texts, read from where they are kept if they are not held."""
        held = self.held_texts
        return held if isinstance(held, Texts) else held.load()

    @property
    def related(self) -> tuple[tuple[str, str], ...]:
        """(url, headline) of each related link: the headlines are read with the texts."""
        return tuple(zip(self.related_urls, self.texts.related_headlines, strict=True))

    slug = _TextField()
    headline = _TextField()
    dek = _TextField()
    angle = _TextField()
    trust_text = _TextField()  # the trust label in words
    run_id = _TextField()
    reviewed_by = _TextField()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Summary) and self._compared() == other._compared()

    def _compared(self) -> tuple[Any, ...]:
        return (self.id, self.newsroom, self.newsroom_title, self.edition, self.published_at,
                self.modified_at, self.trust, self.url, self.related_urls, self.beat, self.agent,
                self.corrections, self.texts, self.images)

    def __hash__(self) -> int:
        return hash((self.id, self.published_at, self.newsroom, self.edition))

    @classmethod
    def of(cls, story: Story) -> Summary:
        """The summary of a validated story."""
        writer = story.writer
        texts = Texts(story.slug, story.headline, story.dek, story.angle,
                      story.labels.trust_text, writer.run_id if writer else "",
                      story.review.by if story.review else "",
                      tuple(r.headline for r in story.related))
        corrections = tuple(sorted(((c.at, c.text, c.kind) for c in story.corrections),
                                   reverse=True))
        return cls(story.id, story.newsroom, story.newsroom_title, story.edition,
                   story.published_at, story.modified_at, story.labels.trust, story.url,
                   tuple(r.url for r in story.related), story.beat,
                   writer.agent if writer else "", corrections, texts,
                   tuple(image.url for image in story.images))


@dataclass(frozen=True, slots=True)
class LoadedStory:
    """A valid story file: where it is, its summary and the sha256 of its bytes, its URL
    path and its search entry (desk.content.digests.search_entry: made once per version,
    kept with its inspection, as the search index names every published story on every
    build); `draft` when it lies below content/drafts/; `blob`, the git blob id of its
    bytes, when they were just read (the inspection cache keeps it)."""

    path: str
    summary: Summary
    digest: str
    url_path: str
    search_entry: str
    draft: bool = False
    blob: str = field(default="", compare=False)

    @classmethod
    def of(cls, path: str, story: Story, digest: str, blob: str = "") -> LoadedStory:
        """The record of a story just validated."""
        url_path = story_url_path(story)
        return cls(path, Summary.of(story), digest, url_path, search_entry(url_path, digest),
                   blob=blob)


class ContentChanged(Exception):
    """A story file changed between loading and rendering (an editor saved meanwhile)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: changed while the site was being built; build again")
        self.path = path


def read_story(item: LoadedStory) -> tuple[Story, dict[str, Any]]:
    """The full story of a loaded file, read again (only its own pages need it), with the
    parsed JSON it was validated from (its key order is index.json's).

    Raises ContentChanged when the bytes are no longer the ones that were checked.
    """
    try:
        raw = Path(item.path).read_bytes()
    except OSError:
        raise ContentChanged(item.path) from None
    if hashlib.sha256(raw).hexdigest() != item.digest:
        raise ContentChanged(item.path)
    ignored: list[Finding] = []  # reported when the file was loaded
    data = parse_json(raw, item.path, ignored, bounded=True)  # the bytes that were checked
    try:
        story = Story.model_validate(data)  # valid, as it was when loaded
    except ValidationError:
        raise ContentChanged(item.path) from None
    return story, data


def story_url_path(story: Story) -> str:
    """The canonical site path of a story."""
    return urls.story_path(story.published_at.date().isoformat(), story.slug)


def story_files(content: Path, findings: list[Finding]) -> list[str]:
    """Every *.json file below content/stories, skipping hidden names; sorted by path."""
    return content_files(content, STORIES, findings)


def content_files(content: Path, folder: str, findings: list[Finding]) -> list[str]:
    """Every *.json file below one folder of content/ (at any depth), skipping hidden
    names; sorted by path.

    Paths are strings (as they are shown): a large desk has tens of thousands.
    """
    root = content.resolve()
    top = content / folder
    if not top.is_dir():
        return []
    found: list[str] = []
    stack = [str(top)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            findings.append(Finding(_display(Path(folder)), "", "unreadable",
                                    f"cannot read folder: {exc.strerror}"))
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                target = Path(entry.path).resolve()
                if not target.is_relative_to(root):
                    findings.append(Finding(_display(Path(entry.path)), "", "symlink-outside",
                                            "symlink resolves outside the content folder"))
                    continue
                if target.is_dir():
                    # Its files are loaded through their real path; following it could loop.
                    continue
            if entry.is_dir():
                stack.append(entry.path)
            elif entry.name.endswith(".json") and entry.is_file():
                found.append(_display(Path(entry.path)) if os.sep != "/" else entry.path)
    return sorted(found)


@dataclass(frozen=True)
class ParsedStory:
    """A valid story file's model, the JSON it was validated from (whose key order is
    index.json's), the sha256 of its bytes and their git blob id (desk.content.gitblobs)."""

    story: Story
    data: dict[str, Any]
    digest: str
    blob: str = ""


def parse_story_file(path: Path, findings: list[Finding]) -> ParsedStory | None:
    """Parse and validate one file; append its findings; the parsed story if valid."""
    read = read_json_file(path, findings, bounded=True)
    if read is None:
        return None
    shown, raw_bytes, data = read
    story = validate_story(data, shown, findings)
    if story is None:
        return None
    return ParsedStory(story, data, hashlib.sha256(raw_bytes).hexdigest(), blob_id(raw_bytes))


def read_json_file(path: Path, findings: list[Finding], bounded: bool = False
                   ) -> tuple[str, bytes, Any] | None:
    """A JSON file's shown path, bytes and parsed object; None (with findings) when it
    cannot be read or parsed (`bounded`: see parse_json)."""
    shown = _display(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        findings.append(Finding(shown, "", "unreadable", f"cannot read file: {exc.strerror}"))
        return None
    data = parse_json(raw_bytes, shown, findings, bounded=bounded)
    return None if data is None else (shown, raw_bytes, data)


@dataclass(frozen=True)
class LoadedWithdrawal:
    """A valid file of content/withdrawn/: where it is, and what it says."""

    path: str
    id: str
    withdrawn_at: datetime
    reason: str


def load_withdrawal_file(path: Path, findings: list[Finding]) -> LoadedWithdrawal | None:
    """Parse and validate one withdrawal file; append its findings; the record if valid."""
    read = read_json_file(path, findings)
    if read is None:
        return None
    shown, _, data = read
    try:
        found = Withdrawal.model_validate(data)
    except ValidationError as exc:
        findings.extend(_validation_findings(exc, data, shown))
        return None
    return LoadedWithdrawal(shown, found.id, found.withdrawn_at, found.reason)


def load_story_file(path: Path, findings: list[Finding]) -> tuple[Story, str] | None:
    """Parse and validate one file; append its findings; the story and its sha256 if valid."""
    parsed = parse_story_file(path, findings)
    return None if parsed is None else (parsed.story, parsed.digest)


def parse_json(raw: bytes, shown: str, findings: list[Finding], bounded: bool = False
               ) -> Any:
    """Decode UTF-8 (BOM allowed) JSON; on failure append a finding and return None.

    However pathological the file (nesting thousands deep, numbers beyond any float,
    NaN, lone surrogates), the outcome is a finding, never an exception. `bounded`: the
    nesting is held to the limit elsewhere (by the caller's validation, which walks it
    for what fails: validate_story; or when these very bytes were inspected), so it is
    walked here only before a walk of this function's own (the forbidden characters').
    """
    try:
        # The bytes themselves (orjson checks they are UTF-8): decoding them to a str
        # first made parsing cost twice as much.
        data = orjson.loads(raw[len(_BOM):] if raw.startswith(_BOM) else raw)
        strict = True  # orjson refuses lone surrogates, so none can be in data
    except orjson.JSONDecodeError:
        data, strict = _parse_text(raw, shown, findings)
        if data is _UNREADABLE:
            return None
    bad = [] if strict else list(_lone_surrogates(data, ""))
    for pointer in bad:
        findings.append(Finding(shown, pointer, "invalid-text",
                                "text contains a lone UTF-16 surrogate escape"))
    if bad:
        return None
    if not isinstance(data, dict):
        findings.append(Finding(shown, "", "invalid-type",
                                f"expected an object, got {_json_type(data)}"))
        return None
    forbidden = _may_hold_forbidden(raw)
    deep = (_too_deep_in(data, shown) if (forbidden or not bounded)
            and raw.count(b"[") + raw.count(b"{") > MAX_NESTING else None)
    if deep is not None:
        findings.append(deep)
        return None
    if forbidden:
        data = _without_forbidden(data, "", shown, findings)
    return data


def _too_deep_in(data: Any, shown: str) -> Finding | None:
    """The finding of arrays and objects nested deeper than MAX_NESTING, if they are."""
    if not _deeper_than(data, MAX_NESTING):
        return None
    return Finding(shown, _too_deep(data) or "", "too-deep",
                   f"nested more than {MAX_NESTING} levels deep")


def _parse_text(raw: bytes, shown: str, findings: list[Finding]) -> tuple[Any, bool]:
    """Bytes orjson refused, decoded and parsed again to say why (a finding, and
    _UNREADABLE), or read by Python's parser (which takes lone surrogates: not strict)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        findings.append(Finding(shown, "", "invalid-utf8",
                                f"not UTF-8: byte {exc.start} cannot be decoded"))
        return _UNREADABLE, False
    try:
        return orjson.loads(text), True
    except orjson.JSONDecodeError as fast_error:
        return _parse_slowly(text, fast_error, shown, findings), False


_BOM = codecs.BOM_UTF8

# Arrays and objects inside one another: a story needs fewer than ten levels. The limit
# keeps every later step (validation, rendering, index.json) far from Python's own.
MAX_NESTING = 64
_UNREADABLE = object()


class _NotJson(ValueError):
    """A value that Python's parser reads but JSON does not have (NaN, Infinity, 1e400)."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise _NotJson(f"number {literal[:20]} is too large")
    return value


def _parse_slowly(text: str, fast_error: orjson.JSONDecodeError, shown: str,
                  findings: list[Finding]) -> Any:
    """What orjson refused, read by the stdlib parser: it says where a syntax error is,
    and reads lone surrogate escapes (reported by the caller) and integers of any size."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        findings.append(Finding(shown, "", "invalid-json", f"invalid JSON: {exc.msg}",
                                line=exc.lineno, column=exc.colno))
    except (RecursionError, ValueError) as exc:
        # Nesting too deep for Python, a number it cannot hold, NaN: orjson says where.
        reason = str(exc) if isinstance(exc, _NotJson) else _orjson_reason(fast_error.msg)
        findings.append(Finding(shown, "", "invalid-json", f"invalid JSON: {reason}",
                                line=fast_error.lineno, column=fast_error.colno))
    return _UNREADABLE


def _orjson_reason(message: str) -> str:
    if "depth" in message or "recursion" in message:
        return "arrays and objects nested too deeply"
    if "infinity" in message:
        return "a number is too large"
    return message


_CONTAINERS = (dict, list)


def _deeper_than(data: Any, limit: int) -> bool:
    """True when arrays and objects nest more than `limit` levels deep: one level at a
    time, with no pointers made (the common case, checked for every file)."""
    level, depth = [data], 0
    while level:
        if depth > limit:
            return True
        below: list[Any] = []
        for value in level:
            children = value.values() if type(value) is dict else value
            # Exact types (parsed JSON has no others): twice as fast as isinstance.
            below += [c for c in children if type(c) in _CONTAINERS]
        level, depth = below, depth + 1
    return False


def _too_deep(data: Any) -> str | None:
    """The JSON pointer of the first array or object nested deeper than MAX_NESTING."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, pointer, depth = stack.pop()
        if depth > MAX_NESTING:
            return pointer
        children = (value.items() if isinstance(value, dict)
                    else enumerate(value) if isinstance(value, list) else ())
        for key, child in children:
            if isinstance(child, dict | list):
                stack.append((child, f"{pointer}/{escape_pointer(str(key))}", depth + 1))
    return None


def validate_story(data: dict[str, Any], shown: str, findings: list[Finding]) -> Story | None:
    """Validate parsed JSON as a Story; append findings (errors and unknown-key warnings)."""
    try:
        # Unknown keys forbidden at first: pydantic then tells in its own pass that a story
        # has none (the usual story), which a walk over its models told after, at 40 µs a
        # story. Such a story nests no deeper than its models (tests/test_schema.py), so
        # only one with unknown keys, or not valid, is walked for its nesting (40 µs
        # more), then validated again keeping them.
        return Story.model_validate(data, extra="forbid")
    except ValidationError:
        pass
    deep = _too_deep_in(data, shown)
    if deep is not None:
        findings.append(deep)
        return None
    try:
        story = Story.model_validate(data)
    except ValidationError as exc:
        findings.extend(_validation_findings(exc, data, shown))
        return None
    for pointer, key, known in story.unknown_keys():
        hint = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
        suffix = f" (did you mean {hint[0]!r}?)" if hint else ""
        findings.append(Finding(shown, pointer, "unknown-key",
                                f"unknown key {key!r} is kept but not used{suffix}",
                                severity="warning"))
    return story


def _validation_findings(exc: ValidationError, data: Any, shown: str) -> list[Finding]:
    by_pointer: dict[str, list[Finding]] = {}
    for err in exc.errors():
        pointer = _pointer_for(err["loc"], data)
        finding = Finding(shown, pointer, _code_for(pointer, err["type"]), _message_for(err))
        by_pointer.setdefault(pointer, []).append(finding)
    out: list[Finding] = []
    for pointer_findings in by_pointer.values():
        # An optional field reports a second, useless error for its `None` branch.
        useful = [f for f in pointer_findings if f.message != "expected null"]
        seen: set[str] = set()
        for finding in useful or pointer_findings:
            if finding.message not in seen:
                seen.add(finding.message)
                out.append(finding)
    return out


_FIELD_CODES = {
    "/schema": "unsupported-schema",
    "/type": "unsupported-type",
    "/slug": "invalid-segment",
    "/newsroom": "invalid-segment",
    "/edition": "invalid-segment",
}


def _code_for(pointer: str, kind: str) -> str:
    if kind == "missing":
        return "missing-field"
    if kind == "extra_forbidden":
        return "unknown-key"
    return _FIELD_CODES.get(pointer, "invalid-value")


def _pointer_for(loc: tuple[int | str, ...], data: Any) -> str:
    """A JSON pointer from a pydantic error location, skipping pydantic's own tags."""
    parts: list[str] = []
    current = data
    for item in loc:
        if isinstance(current, dict) and isinstance(item, str):
            if item not in current and _is_tag(item):
                continue
            parts.append(escape_pointer(item))
            current = current.get(item)
        elif isinstance(current, list) and isinstance(item, int) and 0 <= item < len(current):
            parts.append(str(item))
            current = current[item]
        # Anything else is a union or validator tag such as 'function-after[...]'.
    return "/" + "/".join(parts) if parts else ""


def _is_tag(item: str) -> bool:
    return "[" in item or item in ("str", "int", "none", "bool", "list", "tuple", "dict")


_TYPE_NAMES = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "tuple_type": "an array",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
}


def _message_for(err: Any) -> str:
    kind = err["type"]
    if kind == "missing":
        return "field required"
    if kind == "extra_forbidden":
        return f"unknown key {err['loc'][-1]!r}"
    if kind in _TYPE_NAMES:
        return f"expected {_TYPE_NAMES[kind]}, got {_json_type(err.get('input'))}"
    if kind == "timezone_aware":
        return "datetime has no UTC offset: add Z or +HH:MM"
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"must be {expected}, got {json.dumps(err.get('input'), ensure_ascii=False)}"
    message = str(err["msg"]).removeprefix("Value error, ")
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    return message


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _without_forbidden(value: Any, pointer: str, shown: str, findings: list[Finding]) -> Any:
    """The data with forbidden control characters removed from every string (warned)."""
    if isinstance(value, str):
        cleaned = clean_text(value)
        if cleaned != value:
            findings.append(Finding(shown, pointer, "control-characters",
                                    "control characters removed from the text",
                                    severity="warning"))
        return cleaned
    if isinstance(value, dict):
        return {clean_text(k): _without_forbidden(v, f"{pointer}/{escape_pointer(k)}", shown,
                                                  findings)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_forbidden(v, f"{pointer}/{i}", shown, findings)
                for i, v in enumerate(value)]
    return value


def _lone_surrogates(value: Any, pointer: str) -> Iterator[str]:
    if isinstance(value, str):
        if _SURROGATE.search(value):
            yield pointer
    elif isinstance(value, dict):
        for key, item in value.items():
            child = pointer + "/" + escape_pointer(key)
            if _SURROGATE.search(key):
                yield child
            else:
                yield from _lone_surrogates(item, child)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _lone_surrogates(item, f"{pointer}/{i}")


def layout_warnings(path: str, story: Story) -> list[Finding]:
    """Warn where a story's own URL fields disagree with the layout (they are recomputed).
    Only the path counts, and the finding names the layout's path: a staging or preview
    base URL is no disagreement, and what a file's own checks find does not depend on
    where the site is published (see keys.check_key)."""
    findings = []
    expected = expected_paths(story)
    given: dict[str, str | None] = {"/url": story.url}
    if story.links is not None:
        for key, value in story.links.to_pointer_map().items():
            given["/links/" + key] = value
    if story.reuse is not None and story.reuse.canonical_url is not None:
        given["/reuse/canonical_url"] = story.reuse.canonical_url
    for pointer, value in given.items():
        if value is not None and not _same_place(value, expected[pointer]):
            findings.append(Finding(path, pointer, "url-mismatch",
                                    f"{value} differs from the layout's path "
                                    f"{expected[pointer]} (the layout's URL is used)",
                                    severity="warning"))
    return findings


def _same_place(given: str, layout_path: str) -> bool:
    parts = urlsplit(given)
    return parts.path.endswith(layout_path) and not parts.query and not parts.fragment


def expected_paths(story: Story) -> dict[str, str]:
    """The site paths the layout gives a story's own URL fields, keyed by JSON pointer."""
    path = story_url_path(story)
    return {
        "/url": path,
        "/links/html": path,
        "/links/json": path + "index.json",
        "/links/markdown": path + "index.md",
        "/links/newsroom": urls.newsroom_path(story.newsroom),
        "/links/edition": urls.edition_path(story.edition),
        "/reuse/canonical_url": path,
    }


def expected_urls(story: Story, config: Config) -> dict[str, str]:
    """The absolute URLs the layout gives a story, keyed by JSON pointer."""
    return {pointer: urls.absolute(config, path)
            for pointer, path in expected_paths(story).items()}


def _display(path: Path) -> str:
    return path.as_posix()
