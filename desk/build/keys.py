"""Keys: a hash of everything a piece of work depends on, so unchanged work is skipped.

Glossary (used the same way in every module):

- **digest**: the sha256 of a file's bytes (a story file, a story's index.json).
- **stat**: a file's (mtime, size, inode): cheap, changes whenever its bytes do.
- **key**: a hash of every input of a unit of work. Equal keys mean equal output.
- **site key**: the part every render key shares: desk's code, its rendering libraries,
  the templates (the site's and desk's own), the static assets and the settings that pages show.
- **check key**: what a story file's findings depend on besides its bytes: desk's code,
  its libraries and the settings the checks read.

Every key starts from the **code fingerprint**: desk's own source files and the versions
of the libraries that shape its output, so upgrading either re-checks and re-renders
everything, without `--no-cache`.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache, partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Protocol

from desk.config import Config
from desk.content.digests import Digester, digest, digest_joined
from desk.render.theme import template_folders

# Libraries whose releases can change desk's output or findings.
OUTPUT_LIBRARIES = ("jinja2", "markupsafe", "markdown-it-py", "mdurl", "pydantic",
                    "pydantic-core", "orjson", "pillow")

# Settings that only say where things are, not what the pages show.
_PLACES = {"output_dir", "content_dir", "cache_dir", "templates_dir", "static_dir"}
# Settings of how the search index is split, which no page or finding shows.
_SEARCH_LAYOUT = {"search_bundle_pages", "search_fresh_pages"}


@lru_cache(maxsize=4)
def code_fingerprint(package_dir: Path | None = None) -> str:
    """A hash of desk's source files and of the versions of its output libraries."""
    folder = package_dir or Path(__file__).resolve().parents[1]  # the desk package
    parts: list[bytes | str] = [sys.version]
    for name in OUTPUT_LIBRARIES:
        try:
            parts.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            parts.append(f"{name} missing")
    for source in sorted(folder.rglob("*.py")):
        parts += [source.relative_to(folder).as_posix(), source.read_bytes()]
    return digest(*parts)


def folder_fingerprint(folder: Path) -> str:
    """A hash of every file's name and bytes below a folder (templates, static)."""
    parts: list[bytes | str] = []
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                parts += [path.relative_to(folder).as_posix(), path.read_bytes()]
    return digest(*parts)


def check_key(config: Config) -> str:
    """What every story file's findings depend on besides its own bytes."""
    # Findings name files as the settings name their folders (content_dir and the others
    # are in the dump, relative to where desk runs when inside it), so the same checkout
    # seen from another folder, or moved, gets the same findings: its path is not a part.
    return digest(code_fingerprint(),
                  config.model_dump_json(exclude={"output_dir", "cache_dir", *_SEARCH_LAYOUT}))


def site_key(config: Config, asset_paths: Iterable[str], shared: str = "") -> str:
    """What every rendered page depends on besides its own inputs (`shared`: the values
    every page shows that come from the content, such as the navigation)."""
    return digest(code_fingerprint(), templates_fingerprint(config.templates_dir),
                  *asset_paths, config.model_dump_json(exclude=_PLACES | _SEARCH_LAYOUT),
                  shared)


def templates_fingerprint(site_templates: Path) -> str:
    """A hash of every template a build may use: the site's overrides and desk's own."""
    folders = dict.fromkeys(f.resolve() for f in template_folders(site_templates))
    return digest(*(folder_fingerprint(f) for f in folders))


@dataclass
class KeyCache:
    """Unit keys a long-running process (desk serve) keeps between builds, and the site
    key they were made with: most keys of a large site are the same from one save to the
    next. `asked`: how many keys the last build asked for."""

    site: str = ""
    keys: dict[tuple[str, ...], str] = field(default_factory=dict)
    asked: int = 0


class KeyMaker:
    """Makes unit keys from a site key and a unit's declared inputs (`cache`: see
    KeyCache)."""

    # Keys cached at most, before starting afresh at a build's start: this many, or
    # twice as many as the last build asked for, whichever is more (a site of 150,000
    # stories asks for about 230,000 on every build).
    MAX_CACHED = 200_000

    def __init__(self, site: str, cache: KeyCache | None = None) -> None:
        self.site = site
        self._digest = Digester(site)
        if cache is not None:
            if cache.site != site or len(cache.keys) > max(self.MAX_CACHED, 2 * cache.asked):
                # Keys made for another site key are no use; most of too many are stale.
                cache.site, cache.keys = site, {}
            cache.asked = 0
        self._cache = cache

    def key(self, inputs: tuple[str, ...], recurring: bool = False) -> str:
        """The key of a unit with these inputs (`recurring`: short inputs that recur from
        build to build, worth caching)."""
        cache = self._cache
        if cache is None or not recurring:
            return self._digest(*inputs)
        cache.asked += 1
        found = cache.keys.get(inputs)
        if found is None:
            found = cache.keys[inputs] = self._digest(*inputs)
        return found


def site_id(unit_keys: Mapping[str, str]) -> str:
    """A deterministic id of a built site (same input, same id), from each unit's key."""
    # One joined part rather than one part per unit: a site has tens of thousands, and
    # NUL occurs in no unit id or key. Joined a few thousand at a time: all at once, the
    # lines and their text held 16 MB more at the peak of an hourly build.
    order = sorted(unit_keys)
    return digest_joined(partial(_site_text, order, unit_keys))


# How many units' lines site_id joins at a time.
SITE_TEXT_PIECE = 4096


def _site_text(order: list[str], unit_keys: Mapping[str, str]) -> Iterator[str]:
    """The text site_id digests, in pieces: the units' lines in order, joined by NUL."""
    for start in range(0, len(order), SITE_TEXT_PIECE):
        text = "\x00".join([_site_part(unit, unit_keys[unit])
                             for unit in order[start:start + SITE_TEXT_PIECE]])
        yield "\x00" + text if start else text


def _site_part(unit: str, key: str) -> str:
    """A unit's part of what a site id is made from."""
    return f"{unit}={key}"


class Keyed(Protocol):
    """A unit's record, as far as the site id reads it."""

    @property
    def key(self) -> str: ...


class SiteIds:
    """`site_id` of one site after another, for a long-running process (desk serve): the
    units are kept in order and only the units that changed since the last call are
    placed again (a save changes a few of tens of thousands)."""

    def __init__(self) -> None:
        self._keys: dict[str, str] = {}
        self._lines: dict[str, str] = {}  # by unit: its part of what site_id joins
        self._order: list[str] = []  # the units, sorted

    def site_id(self, units: Mapping[str, Keyed]) -> str:
        """What `site_id({unit: record.key for unit, record in units.items()})` gives."""
        keys, lines, order = self._keys, self._lines, self._order
        for unit in keys.keys() - units.keys():
            del keys[unit], lines[unit], order[bisect.bisect_left(order, unit)]
        for unit, record in units.items():
            old = keys.get(unit)
            if old == record.key:
                continue
            if old is None:
                bisect.insort(order, unit)
            keys[unit] = record.key
            lines[unit] = _site_part(unit, record.key)
        return digest("\x00".join([lines[unit] for unit in order]))
