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

import sys
from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from desk import urls
from desk.config import Config
from desk.content.digests import Digester, digest, digest_all
from desk.render.theme import template_folders

# Libraries whose releases can change desk's output or findings.
OUTPUT_LIBRARIES = ("jinja2", "markupsafe", "markdown-it-py", "mdurl", "pydantic",
                    "pydantic-core", "orjson", "pillow")

# Settings that only say where things are, not what the pages show.
_PLACES = {"output_dir", "content_dir", "cache_dir", "templates_dir", "static_dir"}
# Settings of how the search index is split, which no page or finding shows.
_SEARCH_LAYOUT = {"search_bundle_pages", "search_fresh_pages"}
# Settings no file's own findings read: where the site is published (a story's own URLs
# are compared with the layout's by path alone, so a preview's or a staging base URL finds
# what the site's finds), whether it has a search index, and where its templates and
# static files are (named relative to where desk runs when inside it: a build run from
# another folder read every story file again). The preview's start takes the site's
# build's inspections (desk.serve.server).
_NOT_CHECKED = {"base_url", "search", "templates_dir", "static_dir"}


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
    return digest(code_fingerprint(), config.model_dump_json(
        exclude={"output_dir", "cache_dir", *_SEARCH_LAYOUT, *_NOT_CHECKED}))


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


class KeyMaker:
    """Makes unit keys from a site key and a unit's declared inputs."""

    def __init__(self, site: str) -> None:
        self.site = site
        self._digest = Digester(site)

    def key(self, inputs: tuple[str, ...]) -> str:
        """The key of a unit with these inputs."""
        return self._digest(*inputs)


def site_id(unit_keys: Mapping[str, str]) -> str:
    """A deterministic id of a built site (same input, same id), from each unit's key: the
    digest of its parts' digests (see site_parts), so that a build that changed a few
    units makes again only the digests of their parts (Ledger.site_id)."""
    return parts_id(site_parts(unit_keys))


def parts_id(parts: Mapping[str, str]) -> str:
    """The site id of the units whose parts have these digests."""
    return digest(*(f"{part}={made}" for part, made in sorted(parts.items())))


def site_parts(unit_keys: Mapping[str, str], only: Collection[str] | None = None
               ) -> dict[str, str]:
    """The digest of each part of the units, or of the `only` parts it has: the units
    whose pages one part of a large site's sitemap lists (urls.sitemap_part_of: a month's
    stories, a month's editions, the other pages), so that an hour touches a few parts of
    thousands of units, not the 155,000 units of 100,000 stories."""
    members = units_by_part(unit_keys, only)
    # Hashed as they come: the part of the pages around the stories is 50,000 units, and
    # its lines held at once were a peak of the hour's memory.
    return {part: digest_all(_site_part(unit, unit_keys[unit]) for unit in sorted(units))
            for part, units in members.items()}


def parts_after(before: Mapping[str, str], unit_keys: Mapping[str, str],
                changed: Iterable[str]) -> dict[str, str]:
    """The parts' digests of the units `unit_keys`, from those of the units before them
    (`before`) and the units `changed` since (added, dropped or under another key)."""
    touched = units_by_part(changed).keys()
    parts = {part: made for part, made in before.items() if part not in touched}
    parts.update(site_parts(unit_keys, touched))
    return parts


def units_by_part(units: Iterable[str], only: Collection[str] | None = None
                  ) -> dict[str, list[str]]:
    """The units of each part (see site_parts), or of the `only` parts."""
    # A part is named by a unit's first characters: asked once for each of about 50
    # beginnings, not for each unit.
    names: dict[str, str] = {}
    found: dict[str, list[str]] = {}
    for unit in units:
        head = unit[:urls.SITEMAP_PART_HEAD]
        part = names.get(head)
        if part is None:
            part = names[head] = urls.sitemap_part_of(head)
        if only is None or part in only:
            found.setdefault(part, []).append(unit)
    return found


def _site_part(unit: str, key: str) -> str:
    """A unit's part of what a site id is made from."""
    return f"{unit}={key}"
