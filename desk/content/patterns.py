"""The rules of a story's values as JSON Schema, for the published schema (desk.content.schema).

Each fragment says what the loader's own check says (desk.content.segments, the URL and
image checks of desk.content.models, pydantic's datetimes), as a regular expression that
means the same to an editor's ECMA-262 engine and to Python's: no `\\d`, `\\s` or `\\w`
(Unicode-wide in one, not the other), and every `$` followed by `(?!\\n)`, since Python's
`$` also matches before a final newline. The tests check each against the loader.
"""

from __future__ import annotations

from typing import Any

from desk.content.segments import MAX_SEGMENT_BYTES, SLUG_PATTERN

# Python's white space (`\s`, and what str.split() splits on), spelt out.
SPACE = ("\\t\\n\\x0b\\x0c\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029"
         "\\u202f\\u205f\\u3000")
_END = "$(?!\\n)"


def anchored(pattern: str) -> str:
    """A Python pattern of the form `^...$` made to match only whole strings everywhere."""
    if not (pattern.startswith("^") and pattern.endswith("$")):
        raise ValueError(f"{pattern!r} is not anchored at both ends")
    return pattern[:-1] + _END


# A real date of a year from 0001 to 9999 (29 February in leap years only).
_DATE = ("(?!0000)(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
         "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
         "|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
         "-02-29)")
_HOUR = "(?:[01][0-9]|2[0-3])"
_TIME = f"{_HOUR}:[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?"
_OFFSET = f"(?:[Zz]|[+-]{_HOUR}:[0-5][0-9])"

SEGMENT: dict[str, Any] = {
    "type": "string", "pattern": anchored(SLUG_PATTERN), "maxLength": MAX_SEGMENT_BYTES,
    "description": "A path segment: lowercase letters, digits and single hyphens, at most "
                   f"{MAX_SEGMENT_BYTES} characters (a folder's name on every file system).",
}
# A segment that may be left empty (a story with no beat, a writer with no agent).
MAYBE_SEGMENT: dict[str, Any] = {"anyOf": [{"const": ""}, SEGMENT]}
EDITION: dict[str, Any] = {
    "type": "string", "pattern": f"^{_DATE}T{_HOUR}{_END}", "examples": ["2026-11-14T12"],
    "description": "An hourly edition, YYYY-MM-DDTHH (UTC): a real date and hour.",
}
DATETIME: dict[str, Any] = {
    "type": "string", "format": "date-time",
    "pattern": f"^{_DATE}[Tt]{_TIME}{_OFFSET}{_END}", "examples": ["2026-11-14T12:36:05Z"],
    "description": "An RFC 3339 date and time with its UTC offset (Z or +02:00), read as "
                   "UTC.",
}
DATE: dict[str, Any] = {
    "type": "string", "format": "date", "pattern": f"^{_DATE}{_END}",
    "examples": ["2026-11-13"], "description": "A date, YYYY-MM-DD.",
}
# What check_url refuses: white space, control characters, quotes and angle brackets.
_NOT_IN_URL = f"{SPACE}\\x00-\\x1f<>\"'`"
# The host part: up to the first '/', '?' or '#'; brackets (IPv6 hosts) are left out.
_URL = f"[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\[\\]{_NOT_IN_URL}]+(?:[/?#][^{_NOT_IN_URL}]*)?"
URL: dict[str, Any] = {
    "type": "string", "pattern": f"^{_URL}{_END}", "examples": ["https://example.com/a"],
    "description": "An absolute http(s) URL, without white space, control characters, "
                   "quotes or angle brackets.",
}
# A file below the content's media folder: parts of letters, digits, '.', '_' and '-',
# none starting with a dot, none longer than a file system's name (all ASCII: characters
# are bytes).
_MEDIA = f"media(?:/[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{MAX_SEGMENT_BYTES - 1}}})+"
IMAGE_URL: dict[str, Any] = {
    "type": "string", "pattern": f"^(?:{_URL}|{_MEDIA}){_END}",
    "examples": ["media/2026-11-14/rack.jpg", "https://example.com/rack.jpg"],
    "description": "An absolute http(s) URL, or the path of an image file below "
                   "content/media/, written from the content folder.",
}


def short_text(limit: int) -> dict[str, Any]:
    """Text that is not blank and, its runs of white space each counted as one space and
    those at its ends not at all, at most `limit` characters long."""
    word = f"[^{SPACE}]"
    return {
        "type": "string",
        "pattern": f"^[{SPACE}]*{word}(?:{word}|[{SPACE}]+(?={word})){{0,{limit - 1}}}"
                   f"[{SPACE}]*{_END}",
        "description": f"Plain text, not blank, at most {limit} characters once runs of "
                       "white space are counted as one space.",
    }
