"""The HTTP headers each deployed object carries: Content-Type and Cache-Control."""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass

from desk import urls
from desk.config import CacheControl
from desk.render.kinds import Kind

_UTF8 = "; charset=utf-8"

# By file name first (feeds have their own media types), then by extension. Every text
# type names its charset: desk writes UTF-8 only.
_BY_NAME = {
    urls.FEED_RSS: "application/rss+xml" + _UTF8,
    urls.FEED_ATOM: "application/atom+xml" + _UTF8,
    urls.FEED_JSON: "application/feed+json" + _UTF8,
}
# By path: files whose names say less than their types.
_BY_PATH = {urls.LICENCE.lstrip("/"): "application/rsl+xml" + _UTF8}
_BY_EXTENSION = {
    ".html": "text/html" + _UTF8,
    ".json": "application/json" + _UTF8,
    ".md": "text/markdown" + _UTF8,
    ".txt": "text/plain" + _UTF8,
    ".xml": "application/xml" + _UTF8,
    ".css": "text/css" + _UTF8,
    ".js": "text/javascript" + _UTF8,
    ".svg": "image/svg+xml" + _UTF8,
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".webp": "image/webp",
    ".wasm": "application/wasm",
}
_BINARY = "application/octet-stream"  # Pagefind's chunks: it fetches and unpacks them itself


@dataclass(frozen=True)
class Headers:
    """What an object is served with."""

    content_type: str
    cache_control: str


def content_type(path: str) -> str:
    """The Content-Type of the site file at path."""
    if path in _BY_PATH:
        return _BY_PATH[path]
    name = path.rpartition("/")[2]
    if name in _BY_NAME:
        return _BY_NAME[name]
    extension = "." + name.rpartition(".")[2] if "." in name else ""
    if extension in _BY_EXTENSION:
        return _BY_EXTENSION[extension]
    guessed, encoding = mimetypes.guess_type(name, strict=False)
    if guessed is None or encoding is not None:
        return _BINARY
    return guessed + _UTF8 if guessed.startswith("text/") else guessed


def headers_for(path: str, kind: Kind, cache_control: CacheControl) -> Headers:
    """Both headers of the site file at path, of the given kind."""
    return Headers(content_type(path), getattr(cache_control, kind))
