"""GitHub Actions annotations for findings: `::error file=PATH,line=N,title=T::MESSAGE`.

The runner reads these workflow commands from a step's output and marks the line of the
file on the run's page (and on a pull request's diff). The line of a finding is its own
(a syntax error's), else the line where its JSON pointer's member starts, found by
walking the file's JSON text; else 1.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from desk.content.findings import Finding

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def annotation(finding: Finding, title: str, note: str = "") -> str:
    """One workflow command for a finding (`note`: a sentence added to its message)."""
    kind = "error" if finding.is_error else "warning"
    message = f"[{finding.code}] {finding.pointer + ': ' if finding.pointer else ''}"
    message += finding.message + (f" ({note})" if note else "")
    return (f"::{kind} file={_property(workspace_path(finding.path))},"
            f"line={finding_line(finding)},title={_property(title)}::{_data(message)}")


def warning(title: str, message: str) -> str:
    """A warning about no file (`::warning title=T::MESSAGE`)."""
    return f"::warning title={_property(title)}::{_data(message)}"


def workspace_path(path: str) -> str:
    """A path as GitHub wants it: relative to the working folder when it lies inside."""
    if not os.path.isabs(path):
        return path
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path


def finding_line(finding: Finding) -> int:
    """The line a finding is about: its own, else its pointer's in its file, else 1."""
    if finding.line is not None:
        return finding.line
    if not finding.pointer:
        return 1
    try:
        text = Path(finding.path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return 1
    return pointer_line(text, finding.pointer)


def pointer_line(text: str, pointer: str) -> int:
    """The line where the member at a JSON pointer starts in a JSON text (its key's line
    in an object); the deepest member found when the rest is missing; 1 when none is."""
    found = 0
    try:
        for start, _ in _walk(text, _skip(text, 0), pointer):
            found = start
    except (ValueError, IndexError, RecursionError):
        pass  # a text that is not JSON past some point: the line found so far
    return text.count("\n", 0, found) + 1


def _walk(text: str, position: int, pointer: str) -> Iterator[tuple[int, int]]:
    """(where each member on the pointer's path starts, where its value starts)."""
    for token in pointer.split("/")[1:]:
        part = token.replace("~1", "/").replace("~0", "~")
        member = _member(text, position, part)
        if member is None:
            return
        yield member
        position = member[1]


def _member(text: str, position: int, part: str) -> tuple[int, int] | None:
    """Where the member `part` of the object or array at `position` starts, and its value."""
    opening = text[position]
    if opening not in "{[" or (opening == "[" and not part.isdigit()):
        return None
    closing, index = ("}", None) if opening == "{" else ("]", int(part))
    position = _skip(text, position + 1)
    count = 0
    while text[position] != closing:
        start = position
        if index is None:
            key, position = _DECODER.raw_decode(text, position)
            position = _skip(text, position)
            if text[position] != ":":
                return None
            position = _skip(text, position + 1)
            if key == part:
                return start, position
        elif count == index:
            return start, position
        _, position = _DECODER.raw_decode(text, position)
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
        count += 1
    return None


def _skip(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def _data(value: str) -> str:
    """A workflow command's message, escaped as the runner unescapes it."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(value: str) -> str:
    """A workflow command's property value (file, title), escaped."""
    return _data(value).replace(":", "%3A").replace(",", "%2C")
