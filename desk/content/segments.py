"""Rules for the values that become path segments of the output (slug, newsroom, beat,
agent, a page's folders, edition).

They are checked when a story is loaded and again when a URL is built, so no value can
name a file outside the output folder, or one no file system can hold: each segment is a
folder's name, and file systems hold at most 255 bytes a name (ext4, APFS, NTFS in UTF-16
units: the same for ASCII).
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

SLUG_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
# The longest name a file system holds; a segment is ASCII, so bytes are characters.
MAX_SEGMENT_BYTES = 255
EDITION_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}$"

_SLUG = re.compile(SLUG_PATTERN)
# ASCII digits only: \d takes any script's, which datetime.fromisoformat (the edition's
# hour, desk.content.checks) then refuses, and no URL should hold.
_EDITION = re.compile(EDITION_PATTERN, re.ASCII)


# Cached: URLs are built from the same few thousand values again and again. Not more:
# a cache as large as an archive's slugs would hold each of them to the end of a build.
@lru_cache(maxsize=1 << 12)
def check_segment(value: str) -> str:
    """Return value if it is a valid slug or newsroom segment, else raise ValueError."""
    if len(value) > MAX_SEGMENT_BYTES:
        raise ValueError(
            f"is {len(value):,} characters long; a path segment is at most "
            f"{MAX_SEGMENT_BYTES} (the longest folder name a file system holds)"
        )
    if not _SLUG.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid path segment: use lowercase letters, digits and "
            "single hyphens (pattern " + SLUG_PATTERN + ")"
        )
    return value


# Most edition ids, told at once: ASCII digits naming a month, a day up to the 28th and
# an hour, so a real date and hour in any year but 0000. The archive's list pages build
# the URL of each of its editions (38,000 at 100,000 stories) several times a build:
# more than a cache of recent values would hold, and the full check below is three times
# as slow.
_USUAL_EDITION = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])T(?:[01][0-9]|2[0-3])")


def check_edition(value: str) -> str:
    """Return value if it is a valid edition id (YYYY-MM-DDTHH), else raise ValueError."""
    if _USUAL_EDITION.fullmatch(value) and not value.startswith("0000"):
        return value
    if not _EDITION.fullmatch(value):
        raise ValueError(_edition_message(value))
    try:
        datetime(int(value[:4]), int(value[5:7]), int(value[8:10]), int(value[11:13]))
    except ValueError:
        raise ValueError(_edition_message(value) + ", a real date and hour") from None
    return value


def _edition_message(value: str) -> str:
    return f"{value!r} is not a valid edition: use YYYY-MM-DDTHH (pattern {EDITION_PATTERN})"
