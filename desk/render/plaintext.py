"""Plain text written into Markdown so that any CommonMark reader shows exactly that text.

Headlines, deks, key facts, headings, source titles and the like are plain text in a story
file; Markdown outputs (index.md, llms.txt, llms-full.txt) must not let them turn into
markup, raw HTML, links or lists. Author-written `markdown` prose is not plain text and
never passes through here.

The escapes are backslashes before ASCII punctuation, which CommonMark defines as literal
characters (and `&#96;` for a backtick), added only where a character could mean
something, so the files stay readable.
"""

from __future__ import annotations

import re

# Line endings would start a new block; other white space is kept as it is.
_LINE_BREAKS = re.compile(r"[ \t]*[\r\n]+[ \t]*")
# Characters that open inline markup anywhere: escapes, code spans, emphasis, links,
# raw HTML and autolinks, table cells, strikethrough, footnote references and
# superscripts; `&` only where it would start an entity or character reference.
_INLINE = re.compile(r"[\\`*_\[\]<|~^]|&(?=#?[0-9A-Za-z]+;)")
# At the start of a line: block quotes, headings, list items, thematic breaks.
# Some readers take any Unicode space where CommonMark wants a space or tab, hence \s.
_BLOCK_START = re.compile(r"^(?:[>#]|[-+=](?=\s|$|[-=])|\d{1,9}(?=[.)](?:\s|$)))")
# A run of # at the end closes an ATX heading and would be dropped.
_CLOSING_HASHES = re.compile(r"(?:^|(?<=\s))#+\s*$")


def md_text(value: str) -> str:
    """Plain text as Markdown inline content that reads back as the same text.

    Safe at the start of a line and inside a heading, list item, link text or table
    cell. Line breaks become single spaces (Markdown would join the lines anyway) and
    leading and trailing white space is dropped (Markdown drops it too).
    """
    # The searches below that cannot match are skipped: this runs a hundred times a page.
    text = (_LINE_BREAKS.sub(" ", value) if "\n" in value or "\r" in value else value).strip()
    if not text:
        return ""
    text = _INLINE.sub(_escape, text)
    start = _BLOCK_START.match(text)
    if start is not None:
        # An ordered list marker's . or ) is escaped, any other marker itself.
        at = start.end() if text[: start.end()].isdigit() else 0
        text = text[:at] + "\\" + text[at:]
    closing = _CLOSING_HASHES.search(text) if "#" in text else None
    if closing is not None and not text[: closing.start()].endswith("\\"):
        text = text[: closing.start()] + "\\" + text[closing.start():]
    return text


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    # A backtick as a character reference: some readers take an escaped backtick for the
    # start of a code span all the same (when another one follows on the line).
    return "&#96;" if char == "`" else "\\" + char


_DESTINATION = re.compile(r"[\\()<>]|&(?=#?[0-9A-Za-z]+;)")


def md_url(url: str) -> str:
    """A URL as a Markdown link destination that reads back as the same URL."""
    return _DESTINATION.sub(_escape, url)


_BACKTICKS = re.compile(r"`+")


def md_code(value: str) -> str:
    """Plain text as a Markdown code span that shows exactly that text."""
    text = _LINE_BREAKS.sub(" ", value)
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    # A code span drops one space at each end when both ends have one; a backtick at
    # either end would merge with the fence. Padding with one space each side undoes both.
    if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " "
                                              and text.strip(" ")):
        text = f" {text} "
    return f"{fence}{text}{fence}"


def md_fence(code: str) -> str:
    """The backtick fence for a fenced code block holding `code`: longer than any run of
    backticks inside it, and at least three."""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    return "`" * max(3, longest + 1)
