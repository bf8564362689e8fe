"""What a built site's search index holds, read the way the search page reads it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def bundles(site: Path) -> dict[str, Any]:
    """The search manifest: the bundles to merge and the stale entries."""
    return json.loads((site / "search/bundles.json").read_text(encoding="utf-8"))


def fragments(folder: Path) -> list[dict[str, Any]]:
    """Every page a Pagefind bundle holds (its fragments are gzipped JSON)."""
    found = []
    for fragment in sorted((folder / "fragment").glob("*.pf_fragment")):
        data = gzip.decompress(fragment.read_bytes()).removeprefix(b"pagefind_dcd")
        found.append(json.loads(data))
    return found


def live_entries(site: Path) -> dict[str, tuple[str, str]]:
    """(title, text) of every page a search can find, by URL: the entries of the listed
    bundles less the stale ones. A URL found twice fails (the page would show it twice
    only by luck of its dedupe)."""
    manifest = bundles(site)
    stale = set(manifest["stale"])
    found: dict[str, tuple[str, str]] = {}
    for href in manifest["bundles"]:
        for page in fragments(site / href.strip("/")):
            if page["meta"].get("entry") in stale:
                continue
            assert page["url"] not in found, f"{page['url']} is in two bundles"
            found[page["url"]] = (page["meta"]["title"], page["content"])
    return found


def searched_urls(site: Path) -> set[str]:
    """The URL of every page a search can find."""
    return set(live_entries(site))


def without_search(files: dict[str, bytes]) -> dict[str, bytes]:
    """A site's files but its search index, its manifest and the marker (whose site id
    names every unit, the bundles too): how the index is split into bundles depends on
    the history of builds, what a search finds does not (compare live_entries)."""
    return {name: data for name, data in files.items() if not name.startswith("pagefind/")
            and name not in ("search/bundles.json", ".desk-site")}
