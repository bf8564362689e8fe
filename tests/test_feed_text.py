"""Feeds say exactly what the story says: feedparser reads back each RSS and Atom entry's
title and summary, and the JSON Feed items hold them, as the story's headline and dek."""

from __future__ import annotations

import html
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import feedparser
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from storygen import REPO, make_story

from desk.build.pipeline import render_context
from desk.config import load_config
from desk.content.catalog import Clock, Content, build_catalog
from desk.content.findings import Finding
from desk.content.loader import LoadedStory, load_story_file
from desk.content.prose import clean_text
from desk.render.feeds import feed_units

NOW = datetime(2026, 11, 15, tzinfo=UTC)
EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "100"))

PIECES = ["<script>alert(1)</script>", "<b>bold</b>", "<p>", "AT&T", "&amp;", "&lt;b&gt;",
          "&#x41;", "&copy;", "&nbsp;", "]]>", "<![CDATA[x]]>", "\"quoted\"", "'single'",
          "<!-- c -->", "x < y > z", "*not*", "[yet]", " ", "\t", "\n", "ü", "\u00a0", "\u202e"]


def mojibake_like(text: str) -> bool:
    """feedparser takes text whose Latin-1 bytes are valid UTF-8 ("Ã©") for UTF-8 read as
    Latin-1 and "repairs" it ("é"), whatever the feed says: a reader's guess, left out."""
    try:
        return text.encode("iso-8859-1").decode("utf-8") != text
    except (UnicodeEncodeError, UnicodeDecodeError):
        return False


# Text as the loader leaves it (characters XML and HTML forbid are removed there).
story_text = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
            max_size=40),
).map(clean_text).filter(str.strip).filter(lambda t: not mojibake_like(t))


def feeds_of(data: dict[str, Any]) -> dict[str, bytes]:
    """The feed files of a site holding only this story."""
    config = load_config(REPO / "pyproject.toml")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "story.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        findings: list[Finding] = []
        loaded = load_story_file(path, findings)
        assert loaded is not None, findings
        item = LoadedStory.of(str(path), *loaded)
        clock = Clock(NOW, future=True)
        ctx = render_context(build_catalog(Content((item,)), config, clock), config, clock, None, ())
        return {o.path: o.data for unit in feed_units(ctx) for o in unit.render()}


def read_back(value: str, kind: str) -> str:
    """What a reader shows of a feed text construct: HTML as its text, text as it is."""
    if kind == "text/html":
        assert "<" not in value, value  # no markup: the story's text was escaped
        return html.unescape(value)
    return value


def same_text(shown: str, text: str) -> bool:
    # XML keeps the text; readers only trim the ends and turn CR LF into LF.
    return shown.strip() == text.replace("\r\n", "\n").replace("\r", "\n").strip()


def assert_feeds_say(data: dict[str, Any]) -> None:
    files = feeds_of(data)
    headline, dek = data["headline"], data["dek"]
    for name in ("/feed.xml", "/atom.xml"):
        parsed = feedparser.parse(files[name])
        assert not parsed.bozo, parsed.get("bozo_exception")
        entry = parsed.entries[0]
        title = read_back(entry.title, entry.title_detail.type)
        summary = read_back(entry.summary, entry.summary_detail.type)
        assert same_text(title, headline), (name, entry.title, headline)
        assert same_text(summary, dek), (name, entry.summary, dek)
    item = json.loads(files["/feed.json"])["items"][0]
    assert item["title"] == headline and item["summary"] == dek


SAMPLES = ["<script>alert(1)</script> and after", "AT&T &amp; co", "<b>bold</b>", "x < y > z",
           "&lt;escaped&gt;", "]]> breaks CDATA", "\"quotes\" and 'apostrophes'"]


def test_feeds_keep_sample_hostile_headlines_and_deks() -> None:
    for text in SAMPLES:
        assert_feeds_say(make_story(1, headline=f"Headline {text}", dek=f"{text} dek"))


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(headline=story_text, dek=story_text)
@example(headline="<script>alert(1)</script>", dek="before <script>x</script> after")
def test_feeds_keep_any_headline_and_dek(headline: str, dek: str) -> None:
    assert_feeds_say(make_story(1, headline=headline, dek=dek))
