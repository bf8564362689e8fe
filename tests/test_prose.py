"""Plain text skips the markdown parser (desk.content.prose.is_plain): the result must be the
parser's own, byte for byte, for any text, and real story prose must take that way.

`make fuzz` runs more examples (DESK_FUZZ_EXAMPLES)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storygen import seed

from desk.content.prose import Prose, clean_text, is_plain

EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "300"))
PROSE = Prose()
PARSER = PROSE._md  # the configured markdown-it parser that Prose uses for markup

# Mostly what news prose is made of, with every character that means something to
# markdown mixed in, and the spaces and line ends that Unicode and the parser know.
WORDS = st.sampled_from(["Nvidia", "rose", "42.1", "tokens", "per", "GPU", "Z.ai's",
                         "café", "東京", "1.", "2)", "#", "-", "+", ">", "=", "'"])
PIECES = list("\\`*_~[]<>&|!\"'()#:=+-.") + [
    "\n", "\r", "\r\n", "\t", "  ", "\u00a0", "\u2028", "\u3000", "\x0b", "\x0c", "\x00",
    "&amp;", "&#42;", "<b>", "<https://a.example>", "[a](b)", "![a](b)", "*a*", "**a**",
    "_a_", "~~a~~", "`a`", "\\*", "\\#", "\\.", "a|b", "    ", "\ufeff", "\n# a", "\n- a", "\n***"]
MARKS = st.sampled_from(PIECES)
PHRASES = st.lists(st.one_of(WORDS, st.just(" ")), max_size=6).map("".join)
# Prose with one piece of markup in it (where the shortcut must step aside), prose of
# any pieces, and any text at all.
ANY_TEXT = st.one_of(
    st.tuples(st.sampled_from(["Nvidia ", "Rose", "café "]), PHRASES, MARKS, PHRASES
              ).map("".join),
    st.lists(st.one_of(WORDS, MARKS, st.just(" ")), max_size=12).map("".join),
    st.text(max_size=40))


@pytest.mark.parametrize("piece", PIECES)
def test_each_piece_of_markup_in_prose_is_what_the_parser_makes(piece: str) -> None:
    for text in (f"Rose {piece}", f"Rose{piece}a", f"Rose {piece} a", f"Rose {piece}a{piece}"):
        assert PROSE.block(text) == PARSER.render(clean_text(text))
        assert PROSE.inline(text) == PARSER.renderInline(clean_text(text))


@settings(max_examples=EXAMPLES, deadline=None)
@given(ANY_TEXT)
def test_block_prose_is_what_the_parser_makes(text: str) -> None:
    assert PROSE.block(text) == PARSER.render(clean_text(text))


@settings(max_examples=EXAMPLES, deadline=None)
@given(ANY_TEXT)
def test_inline_prose_is_what_the_parser_makes(text: str) -> None:
    assert PROSE.inline(text) == PARSER.renderInline(clean_text(text))


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=12).map(" ".join))
def test_words_without_markup_are_plain_when_a_letter_leads(text: str) -> None:
    # The property tests above would pass with is_plain always false: this one holds the
    # shortcut to the texts it is for.
    assert is_plain(text) == text[0].isalpha()


def test_the_seed_story_is_plain_prose() -> None:
    story = seed()
    paragraphs = [p["markdown"] for s in story["sections"] for p in s["paragraphs"]]
    assert paragraphs and all(is_plain(p) for p in paragraphs)
