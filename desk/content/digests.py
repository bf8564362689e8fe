"""Digests: short, collision-safe hashes of several values, and the names made from them
that outlive desk's code (a story's search entry).

Every key of the build (desk.build.keys) is a digest; so is a search entry, which names
one version of a story at one URL on its page and in the search index.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from hashlib import _Hash


def digest(*parts: bytes | str) -> str:
    """A short hash of several values (length-prefixed, so no two inputs collide)."""
    return digest_all(parts)


def digest_all(parts: Iterable[bytes | str]) -> str:
    """digest(*parts) of parts hashed as they come, never held together (the sitemap's
    line of every page)."""
    made = hashlib.sha256()
    _feed(made, parts)
    return made.hexdigest()[:32]


class Digester:
    """digest(*first, *rest) for any `rest`, the `first` parts hashed once: a build makes
    every unit's key after the same site key, and every story's search entry after the
    same word."""

    __slots__ = ("_first",)

    def __init__(self, *first: bytes | str) -> None:
        self._first = hashlib.sha256()
        _feed(self._first, first)

    def copy(self) -> _Hash:
        """The hash with the first parts fed, to feed the rest to."""
        return self._first.copy()

    def __call__(self, *rest: bytes | str) -> str:
        made = self._first.copy()
        _feed(made, rest)
        return made.hexdigest()[:32]


def _feed(made: _Hash, parts: Iterable[bytes | str]) -> None:
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        made.update(len(data).to_bytes(8, "big"))
        made.update(data)


_SEARCH_ENTRY = Digester("search-entry")


def search_entry(url: str, story_digest: str) -> str:
    """What names one version of a story at one URL in the search index (and on its
    page): it changes when the story's file or URL does, never with desk's code, so the
    sealed search bundles (desk.search.bundles) outlive upgrades. The digest of
    ("search-entry", url, story_digest), its two parts fed at once: made when a story
    file is inspected, for every story of a build from nothing (the saved state keeps
    it with the story's record: desk.content.loader.LoadedStory)."""
    path, made_from = url.encode("utf-8"), story_digest.encode("utf-8")
    made = _SEARCH_ENTRY.copy()
    made.update(b"".join((len(path).to_bytes(8, "big"), path,
                          len(made_from).to_bytes(8, "big"), made_from)))
    return made.hexdigest()[:12]


def text_digest(data: Mapping[str, Any]) -> str:
    """The digest of what a reader reads of a story, from its validated JSON: headline,
    dek, key facts and sections (headings and paragraphs). 16 hex digits: it tells an
    edit of one story's text, never a secret. Taken from the JSON, not the model: a story
    read again only for it is not validated a second time (a tenth of the time)."""
    text = [data.get("headline", ""), data.get("dek", ""),
            [fact.get("text", "") for fact in data.get("key_facts", ())],
            [[section.get("heading", ""),
              [paragraph.get("markdown", "") for paragraph in section.get("paragraphs", ())]]
             for section in data.get("sections", ())]]
    return hashlib.sha256(orjson.dumps(text)).hexdigest()[:16]
