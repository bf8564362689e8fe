"""Markdown outputs carry the story's exact plain text, read by independent CommonMark
implementations (mistune, commonmark, marko), never markup or raw HTML of the author's.

Plain text is everything in a story file but the `markdown` prose: headline, dek, angle,
key facts, headings, unresolved questions, decision-card items, source titles and more.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import commonmark
import lxml.html
import marko
import mistune
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from storygen import REPO, make_story, write_story

from desk.build.pipeline import build, render_context
from desk.config import Config, load_config
from desk.content.catalog import Catalog, Clock, Content, build_catalog
from desk.content.loader import LoadedStory
from desk.content.models import Story
from desk.render.llms import llms_txt
from desk.render.plaintext import md_code, md_text, md_url
from desk.render.story import render_story

NOW = datetime(2026, 11, 15, tzinfo=UTC)
EXAMPLES = int(os.environ.get("DESK_FUZZ_EXAMPLES", "60"))

# mistune with the GFM extensions that change how text reads, but not its "url" plugin:
# bare URLs are not CommonMark, and that plugin takes the characters after one into it.
_mistune = mistune.create_markdown(escape=False, plugins=["strikethrough", "table",
                                                          "footnotes"])
# Raw HTML passes through all three (mistune with escape=False), so any that the
# Markdown lets in shows up as an element.
READERS: dict[str, Callable[[str], str]] = {
    "mistune": lambda text: str(_mistune(text)),
    "commonmark": commonmark.commonmark,
    "marko": marko.convert,
}
MARKDOWN_TAGS = {"div", "p", "h1", "h2", "h3", "ul", "ol", "li", "em", "strong", "a", "code",
                 "pre", "hr", "blockquote", "br"}

# Pieces of Markdown and HTML that plain text must not turn into.
PIECES = ["<script>alert(1)</script>", "<b>", "</p>", "<!-- c -->", "<https://x.example>",
          "&amp;", "&#x41;", "&copy;", "&lt;", "[", "]", "](https://x.example/)", "![",
          "[x]: https://x.example/", "[^1]", "1. ", "2) ", "- ", "+ ", "* ", "#", "## ",
          "> ", "|", "| --- |", "`", "```", "~~~", "~", "~~", "*", "**", "_", "__", "\\",
          "\n", "\n\n", "   ", "\t", "---", "===", "    code", "www.x.example", "word",
          "ü", "\u00a0", ":", "!", "<", ">", "&", "(", ")", "{{ x }}", "<?php ?>"]
plain_text = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=10).map("".join),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs"),
                          include_characters="\n\t"), min_size=1, max_size=30),
)


def norm(text: str) -> str:
    """White space as a reader sees it: collapsed."""
    return " ".join(text.split())


def read(markdown: str, reader: str, allowed: set[str] = MARKDOWN_TAGS
         ) -> lxml.html.HtmlElement:
    """The HTML a reader makes of some Markdown, with no element Markdown cannot make
    of desk's own markup."""
    html = READERS[reader](markdown)
    root = lxml.html.fragment_fromstring(html or "<p></p>", create_parent="div")
    tags = {e.tag for e in root.iter() if isinstance(e.tag, str)}
    assert tags <= allowed, (reader, tags - allowed, markdown)
    return root


def split_front_matter(markdown: str) -> tuple[dict[str, Any], str]:
    """The YAML front matter of index.md, and the rest. A reader that knows no front
    matter shows it as text, where the author's text may look like emphasis or
    strikethrough, but never like HTML."""
    assert markdown.startswith("---\n")
    front, _, body = markdown[4:].partition("\n---\n")
    for reader in READERS:
        read(markdown[: len(front) + 9], reader, MARKDOWN_TAGS | {"del"})
    return yaml.safe_load(front), body


def text_of(element: lxml.html.HtmlElement) -> str:
    return norm(element.text_content())


def config() -> Config:
    return load_config(REPO / "pyproject.toml")


def render_markdown(data: dict[str, Any]) -> tuple[str, str]:
    """index.md of a story and the llms.txt of a site holding only it."""
    cfg = config()
    story = Story.model_validate(data)
    raw = json.dumps(data).encode()
    item = LoadedStory.of("story.json", story, hashlib.sha256(raw).hexdigest())
    clock = Clock(NOW, future=True)
    catalog: Catalog = build_catalog(Content((item,)), cfg, clock)
    outputs, _ = render_story(story, data, render_context(catalog, cfg, clock, None, ()))
    markdown = next(o for o in outputs if o.path.endswith("index.md")).data.decode()
    return markdown, llms_txt(catalog, cfg)


def hostile_story(texts: list[str]) -> dict[str, Any]:
    """A story whose every plain-text field holds one of `texts` (cycled)."""
    pool = itertools.cycle(texts)
    data = make_story(1)
    # A beat is a path segment (its title comes from the settings, or from the segment).
    data.update(angle=next(pool), headline=next(pool), dek=next(pool), beat="some-beat",
                newsroom_title=next(pool), disclosure=next(pool))
    data["labels"]["trust_text"] = next(pool)
    data["key_facts"][0]["text"] = next(pool)
    data["key_facts"].append({"text": next(pool), "self_reported": True,
                              "cites": [{"claim_ids": ["x"],
                                         "manifest_id": data["manifests"][1]["manifest_id"]}]})
    data["sections"][0]["heading"] = next(pool)
    data["unresolved"] = [next(pool), next(pool)]
    data["decision_card"] = {"useful_for": [next(pool)], "not_for": [next(pool)],
                             "compare_against": [next(pool)]}
    data["manifests"][0]["title"] = next(pool)
    data["manifests"][0]["source_name"] = next(pool)
    data["related"] = [{"url": "https://elsewhere.example/a_(b)", "headline": next(pool)}]
    data["sponsor"] = {"label": next(pool), "title": next(pool), "text": next(pool),
                       "cta": {"label": next(pool), "url": "https://ok.example/x?a=1&amp;b"}}
    data["run_these_manifests"] = {"title": next(pool), "summary": next(pool),
                                   "steps": [{"title": next(pool), "text": "Run it."}],
                                   "commands": {"shell": "echo ```" + next(pool)}}
    data["reuse"] = {"summary": next(pool), "attribution": next(pool)}
    return data


# The h2 headings of index.md from "Key facts" on, in order.
HEADINGS = ("Key facts", "Decision card", "section", "Unresolved questions", "Sources",
            "run", "Related stories", "Advertisement")


def section(root: lxml.html.HtmlElement, name: str) -> list[lxml.html.HtmlElement]:
    """The elements after the h2 heading `name` (of HEADINGS), up to the next h2."""
    headings = list(root.iter("h2"))
    assert text_of(headings[0]) == "Key facts" and len(headings) == len(HEADINGS)
    heading = headings[HEADINGS.index(name)]
    found = []
    for sibling in heading.itersiblings():
        if sibling.tag == "h2":
            break
        found.append(sibling)
    return found


def assert_story_text(markdown: str, data: dict[str, Any], reader: str) -> None:
    front, body = split_front_matter(markdown)
    assert front["title"] == data["headline"]
    root = read(body, reader)
    s = data
    assert [text_of(h) for h in root.iter("h1")] == [norm(s["headline"])], reader
    kicker = root[0]
    assert kicker.tag == "p" and [e.tag for e in kicker] == ["em"], reader
    assert text_of(kicker) == norm(s["angle"]), reader
    after_h1 = list(root.iter("h1"))[0].itersiblings()
    sources = len(s["manifests"])
    assert text_of(next(after_h1)) == (
        f"Written by an agent from {sources} sources · Published without human review"), reader
    assert text_of(next(after_h1)) == norm(s["dek"]), reader
    assert text_of(next(after_h1)).startswith(norm(s["labels"]["trust_text"]) + " · "
                                              + norm(s["newsroom_title"]) + " · "
                                              + "Some beat · "), reader
    facts = [text_of(li) for li in section(root, "Key facts")[0]]
    assert facts == [f"{norm(s['key_facts'][0]['text'])} [1]",
                     f"{norm(s['key_facts'][1]['text'])} (self-reported) [2]"], reader
    card = section(root, "Decision card")
    assert [text_of(e) for e in card] == [
        "Useful for:", norm(s["decision_card"]["useful_for"][0]),
        "Not for:", norm(s["decision_card"]["not_for"][0]),
        "Compare against:", norm(s["decision_card"]["compare_against"][0])], reader
    assert text_of(section(root, "Decision card")[-1].getnext()) == norm(
        s["sections"][0]["heading"]), reader
    unresolved = section(root, "Unresolved questions")[0]
    assert [text_of(li) for li in unresolved] == [norm(q) for q in s["unresolved"]], reader
    first_source = section(root, "Sources")[0][0]
    assert text_of(first_source.find("a")) == norm(s["manifests"][0]["title"]), reader
    assert first_source.find("a").get("href") == s["manifests"][0]["source_url"]
    assert text_of(first_source) == (
        f"{norm(s['manifests'][0]['title'])}, {norm(s['manifests'][0]['source_name'])}, "
        f"2026-11-13. Manifest {s['manifests'][0]['manifest_id']}"), reader
    run = s["run_these_manifests"]
    assert text_of(section(root, "Sources")[-1].getnext()) == norm(run["title"]), reader
    run_part = section(root, "run")
    assert text_of(run_part[0]) == norm(run["summary"]), reader
    assert text_of(run_part[1]) == f"{norm(run['steps'][0]['title'])}. Run it.", reader
    assert run_part[2].find("code").text.rstrip("\n") == run["commands"]["shell"].rstrip("\n")
    related = section(root, "Related stories")[0][0].find("a")
    assert text_of(related) == norm(s["related"][0]["headline"]), reader
    assert related.get("href") == s["related"][0]["url"], reader
    ad = s["sponsor"]
    assert text_of(section(root, "Related stories")[-1].getnext()) == (
        f"Advertisement: {norm(ad['label'])}"), reader
    ad_part = section(root, "Advertisement")
    assert [text_of(e) for e in ad_part[:3]] == [norm(ad["title"]), norm(ad["text"]),
                                                 norm(ad["cta"]["label"])], reader
    assert ad_part[2].find("a").get("href") in (ad["cta"]["url"], "https://ok.example/x?a=1&b")
    tail = [text_of(e) for e in root if e.tag == "p"][-2:]
    assert tail[0] == norm(s["disclosure"]), reader
    assert tail[1].startswith(f"Reuse: {norm(s['reuse']['summary'])} Credit "
                              f"{norm(s['reuse']['attribution'])}, https://"), reader


def assert_llms_entry(llms: str, data: dict[str, Any], reader: str) -> None:
    root = read(llms, reader)
    entries = [li for li in root.iter("li") if li.find("a") is not None
               and li.find("a").get("href", "").endswith("/index.md")]
    assert len(entries) == 1, reader
    link = entries[0].find("a")
    assert text_of(link) == norm(data["headline"]), reader
    assert text_of(entries[0]) == f"{norm(data['headline'])}: {norm(data['dek'])}", reader
    assert [text_of(h) for h in root.iter("h2")][0] == norm(data["newsroom_title"]), reader


SAMPLE = ["<script>alert(1)</script> headline", "A [bracketed] *not* emphasis", "1. listed",
          "- dashed", "+ plus", "# not a heading #", "> not quoted", "AT&T &amp; &#x41;",
          "pipes | in | text", "`ticks` and ```fences```", "trailing backslash \\",
          "x_y_z __bold__ ~~struck~~", "<https://autolink.example>", "[x](javascript:alert(1))",
          "---", "2026. A year", "snake_case and C#", "tab\tand\nnewline", "&lt;b&gt;"]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_index_md_and_llms_txt_keep_sample_hostile_text(reader: str) -> None:
    for rotation in range(len(SAMPLE)):
        texts = SAMPLE[rotation:] + SAMPLE[:rotation]
        data = hostile_story(texts)
        markdown, llms = render_markdown(data)
        assert_story_text(markdown, data, reader)
        assert_llms_entry(llms, data, reader)


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(texts=st.lists(plain_text, min_size=1, max_size=8))
@example(texts=["<script>x</script>", "[yet]", "*not*", "1. a", "- b"])
def test_index_md_and_llms_txt_keep_any_plain_text(texts: list[str]) -> None:
    texts = [t if t.strip() else "x" + t for t in texts]  # empty fields are left out
    data = hostile_story(texts)
    markdown, llms = render_markdown(data)
    for reader in READERS:
        assert_story_text(markdown, data, reader)
        assert_llms_entry(llms, data, reader)


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(text=plain_text.filter(str.strip), context=st.sampled_from(
    ["{}", "# {}", "## {}", "- {}", "1. {}", "[{}](https://x.example/)", "x {} y",
     "**{}.** z", "*{}*", "> {}"]))
def test_md_text_reads_back_in_any_context(text: str, context: str) -> None:
    markdown = context.format(md_text(text))
    frame = context.format("\0")
    for reader in READERS:
        root = read(markdown, reader)
        seen = text_of(root)
        before, _, after = norm(frame).partition("\0")
        for mark in ("## ", "# ", "- ", "1. ", "> ", "**", "*", "[", "](https://x.example/)"):
            before, after = before.replace(mark, ""), after.replace(mark, "")
        assert seen == norm(before + norm(text) + after), (reader, markdown)


@pytest.mark.parametrize("url", ["https://x.example/a_(b)", "https://x.example/\\*",
                                 "https://x.example/a)b", "https://x.example/?q=a&b=c"])
def test_md_url_reads_back(url: str) -> None:
    for reader in READERS:
        link = read(f"[x]({md_url(url)})", reader).find(".//a")
        assert link is not None and unquote(link.get("href")) == url, reader


def test_md_url_keeps_entity_like_text_for_the_reference_reader() -> None:
    # mistune and marko decode a character reference even after a backslash, against
    # CommonMark; no spelling of "&amp;" reads back in all three.
    url = "https://x.example/?a=1&amp;b"
    link = read(f"[x]({md_url(url)})", "commonmark").find(".//a")
    assert link is not None and link.get("href") == url


@pytest.mark.parametrize("text", ["1794620357587490784", "a`b", "`edge`", " both ", "``"])
def test_md_code_reads_back(text: str) -> None:
    for reader in READERS:
        code = read(f"Manifest {md_code(text)}", reader).find(".//code")
        assert code is not None and code.text == text, reader


def test_built_site_markdown_files_hold_no_raw_html(tmp_path: Path) -> None:
    content = tmp_path / "content"
    data = hostile_story(SAMPLE)
    write_story(content, data)
    out = tmp_path / "public"
    cfg = load_config(REPO / "pyproject.toml", {"content_dir": content, "output_dir": out,
                                                "cache_dir": tmp_path / "cache",
                                                "search": False})
    assert build(cfg, Clock(NOW)).ok
    for name in ("stories/2026-11-14/story-number-1/index.md", "llms.txt", "llms-full.txt"):
        text = (out / name).read_text(encoding="utf-8")
        for reader in READERS:
            read(text, reader)  # no element that Markdown cannot make
    full = read((out / "llms-full.txt").read_text(encoding="utf-8"), "commonmark")
    assert norm(data["headline"]) in [text_of(h) for h in full.iter("h1")]
