"""What each file of a built site is, by its path: the kind decides when `desk deploy`
uploads it, how long caches may keep it, and where its bytes count in the size report.

Paths here are relative to the site folder, with '/' separators (`stories/…/index.html`).
"""

from __future__ import annotations

from typing import Literal

from desk import urls
from desk.render.assets import STATIC_PREFIX, is_fingerprinted

Kind = Literal["asset", "static", "story", "search", "list", "feed"]

# Deploy order: what a page links to goes up before the page, what lists stories after
# the stories, and the files that point at everything else (feeds, sitemaps, llms files,
# robots.txt) last.
KINDS: tuple[Kind, ...] = ("asset", "static", "story", "search", "list", "feed")

_STATIC = STATIC_PREFIX.strip("/") + "/"
_STORIES = "stories/"
_MEDIA = urls.MEDIA.strip("/") + "/"  # the content's images: content-hashed names
_SEARCH = urls.PAGEFIND.strip("/") + "/"
# Pagefind names the chunks of its index by their content hash; its entry files keep
# their names and point at the chunks. Each bundle of the index (desk.search.index) has its own.
_SEARCH_CHUNKS = ("/fragment/", "/index/", "/filter/")
_FEED_NAMES = frozenset({urls.FEED_RSS, urls.FEED_ATOM, urls.FEED_JSON})
_ROOT_FEEDS = frozenset(p.strip("/") for p in (
    urls.SITEMAP, urls.NEWS_SITEMAP, urls.LLMS, urls.LLMS_FULL, urls.ROBOTS, urls.REUSE_JSON,
    urls.PUBLISHER_JSON, urls.LICENCE))


def kind_of(path: str) -> Kind:
    """The kind of the site file at `path`."""
    if path.startswith(_STATIC):
        return "asset" if is_fingerprinted(path) else "static"
    if path.startswith(_STORIES):
        return "story"
    if path.startswith(_MEDIA):
        return "asset"
    if path.startswith(_SEARCH):
        rest = path[len(_SEARCH) - 1:]
        hashed = any(chunk in rest for chunk in _SEARCH_CHUNKS) or rest.endswith(".pf_meta")
        return "asset" if hashed else "search"
    name = path.rpartition("/")[2]
    if path in _ROOT_FEEDS or name in _FEED_NAMES or _is_sitemap_part(path):
        return "feed"
    return "list"


def _is_sitemap_part(path: str) -> bool:
    """`sitemap-N.xml`, the parts a large site's sitemap index points at."""
    return path.startswith("sitemap-") and path.endswith(".xml") and "/" not in path
