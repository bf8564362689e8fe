"""Static assets: desk's static files and the site's own (which win, file by file), with
content hashes in the names of CSS and JS."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from desk.render.theme import static_files

# Assets whose names carry a content hash, so pages can ask browsers to cache them forever.
_FINGERPRINTED = (".css", ".js")
_HASH_LENGTH = 10
_FINGERPRINT = re.compile(rf"\.[0-9a-f]{{{_HASH_LENGTH}}}\.(?:css|js)$")
STATIC_PREFIX = "/static/"


@dataclass(frozen=True)
class Asset:
    """One static file and the site path it is published at."""

    name: str
    source: Path
    path: str


def collect_assets(static_dir: Path) -> tuple[Asset, ...]:
    """Every non-hidden file of desk's static folder and of the site's (static_dir), the
    site's winning for a name both have, in a stable order."""
    assets = []
    for name, source in static_files(static_dir).items():
        published = name
        if source.suffix in _FINGERPRINTED:
            digest = hashlib.sha256(source.read_bytes()).hexdigest()[:_HASH_LENGTH]
            published = f"{name[: -len(source.suffix)]}.{digest}{source.suffix}"
        assets.append(Asset(name, source, STATIC_PREFIX + published))
    return tuple(assets)


def is_fingerprinted(name: str) -> bool:
    """Whether a published static file's name carries its content hash (so never changes)."""
    return _FINGERPRINT.search(name) is not None
