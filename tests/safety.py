"""Assertions that a page is inert: no foreign script, no event handler, no unsafe URL."""

from __future__ import annotations

import re

import lxml.html

URL_ATTRIBUTES = ("href", "src", "action", "formaction", "poster", "srcset", "background",
                  "xlink:href", "cite", "data")
UNSAFE_SCHEME = re.compile(r"^(javascript|vbscript|data|file):")


def squeeze(url: str) -> str:
    """A URL as a browser would read its scheme: controls and spaces dropped, lowercased."""
    return re.sub(r"[\x00-\x20\x7f]+", "", url).lower()


def assert_inert(html: bytes, static_prefix: str = "/static/") -> lxml.html.HtmlElement:
    """Parse html and assert that nothing in it can run an author's code."""
    document = lxml.html.document_fromstring(html)
    for element in document.iter():
        if not isinstance(element.tag, str):
            continue
        tag = element.tag.lower()
        assert tag not in ("iframe", "object", "embed", "frame", "base", "form", "meta") or (
            tag == "meta" and element.get("http-equiv") is None
        ) or (tag == "form" and element.get("role") == "search"
              and element.get("action") == "/search/"), f"foreign <{tag}> element"
        if tag == "script":
            kind = element.get("type", "")
            src = element.get("src", "")
            assert kind == "application/ld+json" or src.startswith(
                (static_prefix, "/pagefind/")), "a script that is not desk's own"
        for name, value in element.attrib.items():
            assert not name.lower().startswith("on"), f"event handler attribute {name}"
            if name.lower() in URL_ATTRIBUTES:
                assert not UNSAFE_SCHEME.match(squeeze(value)), f"unsafe URL {value!r}"
            if name.lower() == "style":
                assert "url(" not in value.lower() and "expression(" not in value.lower()
    return document
