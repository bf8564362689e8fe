"""Read story files into validated models, collecting every problem across every file.

Nothing here raises on bad content: each problem becomes a Finding, and the caller decides
what to do with them.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import orjson
from pydantic import ValidationError

from desk import urls
from desk.config import Config
from desk.findings import Finding, escape_pointer
from desk.models import Story
from desk.prose import clean_text

_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters HTML and XML forbid may hide in text, raw or as \u escapes; this finds
# every file that might hold one, so the others skip the walk below.
_MAYBE_FORBIDDEN = re.compile(
    "[\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]"
    r"|\\u00[01][0-9a-fA-F]|\\u00[78][0-9a-fA-F]|\\u009[0-9a-fA-F]"
    r"|\\u[fF][dD][dDeE][0-9a-fA-F]|\\u[fF][fF][fF][eEfF]"
)


@dataclass(frozen=True)
class LoadedStory:
    """A valid story and where it came from."""

    path: str
    story: Story
    digest: str
    url_path: str = field(init=False)

    def __post_init__(self) -> None:
        # Asked for everywhere (catalog, pages, feeds); computed once.
        object.__setattr__(self, "url_path", story_url_path(self.story))


@dataclass(frozen=True)
class LoadResult:
    """Every valid story (in path order) and every finding."""

    stories: tuple[LoadedStory, ...]
    findings: tuple[Finding, ...]

    @property
    def errors(self) -> tuple[Finding, ...]:
        """The findings that stop a build."""
        return tuple(f for f in self.findings if f.is_error)


def story_url_path(story: Story) -> str:
    """The canonical site path of a story."""
    return urls.story_path(story.published_at.date().isoformat(), story.slug)


class ParseMemory(Protocol):
    """Where parsed files can be remembered between loads (see desk.cache)."""

    def recall(self, path: Path) -> tuple[LoadedStory | None, tuple[Finding, ...]] | None: ...

    def remember(self, path: Path, story: LoadedStory | None,
                 findings: tuple[Finding, ...]) -> None: ...


def load_content(config: Config, memory: ParseMemory | None = None) -> LoadResult:
    """Load every story under CONTENT/stories/, in a stable order."""
    findings: list[Finding] = []
    content = config.content_dir
    if not content.is_dir():
        findings.append(Finding(str(content), "", "content-missing",
                                "content folder not found"))
        return LoadResult((), tuple(findings))
    loaded: list[LoadedStory] = []
    for path in _story_files(content, findings):
        recalled = memory.recall(path) if memory is not None else None
        if recalled is None:
            own: list[Finding] = []
            story_or_none = load_story_file(path, own)
            if memory is not None:
                memory.remember(path, story_or_none, tuple(own))
        else:
            story_or_none, own = recalled[0], list(recalled[1])
        findings.extend(own)
        if story_or_none is not None:
            loaded.append(story_or_none)
    findings.extend(_url_collisions(loaded))
    findings.extend(layout_warnings(loaded, config))
    return LoadResult(tuple(loaded), tuple(findings))


def _story_files(content: Path, findings: list[Finding]) -> list[Path]:
    """Every *.json file below content/stories, skipping hidden names; sorted by path."""
    root = content.resolve()
    stories = content / "stories"
    if not stories.is_dir():
        return []
    found: list[Path] = []
    stack = [stories]
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
            path = Path(entry.path)
            if entry.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    findings.append(Finding(_display(path), "", "symlink-outside",
                                            "symlink resolves outside the content folder"))
                    continue
                if target.is_dir():
                    # Its files are loaded through their real path; following it could loop.
                    continue
            if entry.is_dir():
                stack.append(path)
            elif entry.name.endswith(".json") and entry.is_file():
                found.append(path)
    return sorted(found, key=lambda p: p.as_posix())


def load_story_file(path: Path, findings: list[Finding]) -> LoadedStory | None:
    """Parse and validate one file; append its findings; return the story if valid."""
    shown = _display(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        findings.append(Finding(shown, "", "unreadable", f"cannot read file: {exc.strerror}"))
        return None
    data = parse_json(raw_bytes, shown, findings)
    if data is None:
        return None
    story = validate_story(data, shown, findings)
    if story is None:
        return None
    return LoadedStory(shown, story, hashlib.sha256(raw_bytes).hexdigest())


def parse_json(raw: bytes, shown: str, findings: list[Finding]) -> Any:
    """Decode UTF-8 (BOM allowed) JSON; on failure append a finding and return None."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        findings.append(Finding(shown, "", "invalid-utf8",
                                f"not UTF-8: byte {exc.start} cannot be decoded"))
        return None
    try:
        data = orjson.loads(text)
        strict = True  # orjson refuses lone surrogates, so none can be in data
    except orjson.JSONDecodeError:
        strict = False
        # The stdlib parser says where the error is; it also reads lone surrogate escapes,
        # which orjson refuses, so they get their own clear message below.
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            findings.append(Finding(shown, "", "invalid-json", f"invalid JSON: {exc.msg}",
                                    line=exc.lineno, column=exc.colno))
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
    if _MAYBE_FORBIDDEN.search(text):
        data = _without_forbidden(data, "", shown, findings)
    return data


def validate_story(data: dict[str, Any], shown: str, findings: list[Finding]) -> Story | None:
    """Validate parsed JSON as a Story; append findings (errors and unknown-key warnings)."""
    context: dict[str, bool] = {}
    try:
        story = Story.model_validate(data, context=context)
    except ValidationError as exc:
        findings.extend(_validation_findings(exc, data, shown))
        return None
    if not context:
        return story
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


def _url_collisions(loaded: list[LoadedStory]) -> list[Finding]:
    first_at: dict[str, LoadedStory] = {}
    findings = []
    for item in loaded:
        other = first_at.setdefault(item.url_path, item)
        if other is not item:
            findings.append(Finding(item.path, "/slug", "duplicate-url",
                                    f"{item.url_path} is also the URL of {other.path}"))
    return findings


def layout_warnings(loaded: list[LoadedStory], config: Config) -> list[Finding]:
    """Warn where a story's own URL fields disagree with the layout (they are recomputed)."""
    findings = []
    for item in loaded:
        expected = expected_urls(item.story, config)
        story = item.story
        given: dict[str, str | None] = {"/url": story.url}
        if story.links is not None:
            for key, value in story.links.to_pointer_map().items():
                given["/links/" + key] = value
        if story.reuse is not None and story.reuse.canonical_url is not None:
            given["/reuse/canonical_url"] = story.reuse.canonical_url
        for pointer, value in given.items():
            # Only the path counts: a staging or preview base URL is not a disagreement.
            if value is not None and not _same_place(value, expected[pointer], config):
                findings.append(Finding(item.path, pointer, "url-mismatch",
                                        f"{value} differs from the layout's "
                                        f"{expected[pointer]} (the layout's URL is used)",
                                        severity="warning"))
    return findings


def _same_place(given: str, expected: str, config: Config) -> bool:
    layout_path = urlsplit(expected).path[len(config.base_path):]
    parts = urlsplit(given)
    return parts.path.endswith(layout_path) and not parts.query and not parts.fragment


def expected_urls(story: Story, config: Config) -> dict[str, str]:
    """The absolute URLs the layout gives a story, keyed by JSON pointer."""
    path = story_url_path(story)
    return {
        "/url": urls.absolute(config, path),
        "/links/html": urls.absolute(config, path),
        "/links/json": urls.absolute(config, path + "index.json"),
        "/links/markdown": urls.absolute(config, path + "index.md"),
        "/links/newsroom": urls.absolute(config, urls.newsroom_path(story.newsroom)),
        "/links/edition": urls.absolute(config, urls.edition_path(story.edition)),
        "/reuse/canonical_url": urls.absolute(config, path),
    }


def _display(path: Path) -> str:
    return path.as_posix()
