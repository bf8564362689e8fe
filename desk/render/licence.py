"""The site's reuse terms in every form, each made from the one table, `[tool.desk.reuse]`:
the terms page (/terms/reuse/), reuse.json, the RSL 1.0 licence file (/license.xml) and
robots.txt's `License:` and `Content-Signal:` lines. None states a term of its own, so they
cannot disagree.

In: the settings. Out: the terms as data (`site_reuse`), the licence file's bytes, the
Content-Signal value.

Pictures are kept out of the licence: the content's image files (/media/) get a scope of
their own that grants no AI use, and the terms say that a picture may be reused only as
its credit allows. desk cannot tell a picture of the newsroom's own from a third party's
(a credit is free text), so it never licenses either beyond what its credit says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from desk import urls
from desk.config import Config
from desk.content.models import REUSE_FIELDS

RSL_NAMESPACE = "https://rslstandard.org/rsl"
RSL_TYPE = "application/rsl+xml"
# The uses Content Signals name, in the order robots.txt gives them.
SIGNALS = ("search", "ai-input", "ai-train")
# What the terms say of pictures, on the page and in reuse.json alike.
PICTURES = ("Pictures are not covered by these terms. Each picture carries its credit; "
            "reuse a picture only as its rights holder allows. The licence file grants "
            "no AI use of the site's image files.")


def uses(config: Config, key: str) -> tuple[str, ...]:
    """The uses the terms permit or prohibit (`key`: "permits" or "prohibits")."""
    given = config.reuse.get(key, ())
    return given if isinstance(given, tuple) else ()


def covers(tokens: Sequence[str], use: str) -> bool:
    """Whether RSL usage tokens take in a use: named, or within `all` or `ai-all`."""
    return use in tokens or "all" in tokens or (use.startswith("ai-") and "ai-all" in tokens)


def content_signal(config: Config) -> str:
    """robots.txt's Content-Signal value, e.g. "search=yes, ai-input=yes, ai-train=no":
    each use the terms permit is yes, each they prohibit no; a use they say nothing of
    is left out (no preference), and with none the line is left out."""
    permits, prohibits = uses(config, "permits"), uses(config, "prohibits")
    said = [f"{use}=yes" if covers(permits, use) else f"{use}=no" for use in SIGNALS
            if covers(permits, use) or covers(prohibits, use)]
    return ", ".join(said)


def site_reuse(config: Config) -> dict[str, Any]:
    """The site's reuse terms in machine form (/.well-known/reuse.json): the table's
    texts and uses, and where each form of the terms is."""
    reuse = config.reuse
    data: dict[str, Any] = {k: reuse[k] for k in REUSE_FIELDS if k in reuse}
    data.update({k: v for k, v in reuse.items() if k not in data})
    for key in ("permits", "prohibits"):
        if key in data:
            data[key] = list(data[key])
    data["pictures"] = PICTURES
    data["license_url"] = urls.absolute(config, urls.REUSE_TERMS)
    data["machine_url"] = urls.absolute(config, urls.REUSE_JSON)
    data["rsl_url"] = urls.absolute(config, urls.LICENCE)
    return data


def licence_xml(config: Config) -> bytes:
    """/license.xml, the RSL 1.0 licence file: the site's pages under the terms' uses
    and attribution; its image files under no AI use (see the module's docstring)."""
    terms = urls.absolute(config, urls.REUSE_TERMS)
    permits, prohibits = uses(config, "permits"), uses(config, "prohibits")
    root = config.base_path + "/"
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<rsl xmlns="{RSL_NAMESPACE}">',
             f"  <content url={quoteattr(root)}>",
             *_licence(permits, prohibits, bool(config.reuse.get("attribution"))),
             f"    <copyright type=\"organization\">{escape(config.site_name)}</copyright>",
             f"    <terms>{escape(terms)}</terms>",
             "  </content>",
             # The pictures: search engines may show them if the terms allow search; no AI
             # use is granted, whatever the terms say of the text.
             f"  <content url={quoteattr(root + urls.MEDIA.lstrip('/'))}>",
             *_licence(("search",) if covers(permits, "search") else (),
                       ("ai-all",) if covers(permits, "search") else ("all",), False),
             f"    <terms>{escape(terms + '#pictures')}</terms>",
             "  </content>",
             "</rsl>", ""]
    return "\n".join(lines).encode("utf-8")


def _licence(permits: Sequence[str], prohibits: Sequence[str], attribution: bool
             ) -> list[str]:
    lines = ["    <license>"]
    if permits:
        lines.append(f'      <permits type="usage">{" ".join(permits)}</permits>')
    if prohibits:
        lines.append(f'      <prohibits type="usage">{" ".join(prohibits)}</prohibits>')
    if attribution:  # free, with the credit the terms ask (their page's Credit line)
        lines.append('      <payment type="attribution"/>')
    lines.append("    </license>")
    return lines


# Each RSL use in words, for the terms page.
USE_WORDS = {
    "all": "any use",
    "ai-all": "any use by AI systems",
    "ai-train": "training AI models",
    "ai-input": "input to AI answers and agents (retrieval, grounding)",
    "ai-index": "indexing for AI-powered search",
    "search": "search engines' indexes and results",
}


def usage_words(reuse: dict[str, Any]) -> list[tuple[str, str]]:
    """The permitted and prohibited uses of the terms (site_reuse) in words, as the terms
    page lists them: (label, uses)."""
    said = [("Permitted uses", reuse.get("permits", ())),
            ("Prohibited uses", reuse.get("prohibits", ()))]
    return [(label, "; ".join(USE_WORDS[token] for token in tokens))
            for label, tokens in said if tokens]
