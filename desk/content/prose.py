"""Author-written markdown and text, made safe for HTML.

One configured markdown-it-py parser: CommonMark plus tables and strikethrough, raw HTML
off, and links only to http(s), mailto, fragments and relative paths (so `javascript:`,
`vbscript:` and `data:` links render as plain text).
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
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


# What can make one line of text more than text to the parser: escapes, code, emphasis,
# strikethrough, links and images, autolinks, entities, tables, line breaks and tabs.
_MARKUP = re.compile(r"[\\`*_~\[\]<&|\n\r\t]")


def is_plain(text: str) -> bool:
    """True when markdown renders the text as itself, escaped: one line that starts with a
    letter (no block, list or heading starts so), ends with no space and holds none of
    the characters inline markup is made of. Most paragraphs of a news story are such."""
    return (text[:1].isalpha() and not text[-1].isspace()
            and _MARKUP.search(text) is None)


def is_safe_link(url: str) -> bool:
    """True for http(s), mailto, fragment and relative links; false for any other scheme."""
    squeezed = re.sub(r"[\x00-\x20\x7f]+", "", url).lower()
    match = _SCHEME.match(squeezed)
    return match is None or match.group(1) in _SAFE_SCHEMES


# How many inline texts a parser keeps rendered.
INLINE_KEPT = 256


class Prose:
    """The one markdown parser of a build.

    A story's paragraphs are its own, so they are not kept: a cache of them grew with
    the archive in every render process and only paid off on repeated text. Plain text
    (is_plain) skips the parser, whose output for it is known: parsing paragraphs without
    any markup was a fifth of rendering a story. Inline texts (the steps of "run these
    manifests") recur from story to story: the last few hundred are kept.
    """

    def __init__(self) -> None:
        md = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False})
        md.enable(["table", "strikethrough"])
        md.validateLink = is_safe_link  # type: ignore[method-assign]
        self._md = md
        self._inline = lru_cache(maxsize=INLINE_KEPT)(self._render_inline)

    def block(self, text: str) -> Markup:
        """Markdown as block HTML (paragraphs, lists, tables)."""
        text = clean_text(text)
        if is_plain(text):
            return Markup(f"<p>{escapeHtml(text)}</p>\n")
        return Markup(self._md.render(text))

    def inline(self, text: str) -> Markup:
        """Markdown as inline HTML (no wrapping paragraph)."""
        return self._inline(text)

    def _render_inline(self, text: str) -> Markup:
        text = clean_text(text)
        if is_plain(text):
            return Markup(escapeHtml(text))
        return Markup(self._md.renderInline(text))
