"""Author-written markdown and text, made safe for HTML.

One configured markdown-it-py parser: CommonMark plus tables and strikethrough, raw HTML
off, and links only to http(s), mailto, fragments and relative paths (so `javascript:`,
`vbscript:` and `data:` links render as plain text).
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markupsafe import Markup

_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
# Characters HTML forbids in text (C0/C1 controls but tab and newlines, noncharacters).
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]"
)


def clean_text(text: str) -> str:
    """Drop characters that may not appear in an HTML document."""
    return _FORBIDDEN.sub("", text) if _FORBIDDEN.search(text) else text


def is_safe_link(url: str) -> bool:
    """True for http(s), mailto, fragment and relative links; false for any other scheme."""
    squeezed = re.sub(r"[\x00-\x20\x7f]+", "", url).lower()
    match = _SCHEME.match(squeezed)
    return match is None or match.group(1) in _SAFE_SCHEMES


class Prose:
    """The one markdown parser of a build.

    Nothing rendered is kept: a story's paragraphs are its own, so a cache of them grew
    with the archive in every render process and only paid off on repeated text.
    """

    def __init__(self) -> None:
        md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False})
        md.enable(["table", "strikethrough"])
        md.validateLink = is_safe_link  # type: ignore[method-assign]
        self._md = md

    def block(self, text: str) -> Markup:
        """Markdown as block HTML (paragraphs, lists, tables)."""
        return Markup(self._md.render(clean_text(text)))

    def inline(self, text: str) -> Markup:
        """Markdown as inline HTML (no wrapping paragraph)."""
        return Markup(self._md.renderInline(clean_text(text)))
