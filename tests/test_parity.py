"""Format parity: the HTML, Markdown and JSON of a story say the same things."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import lxml.html
from conftest import NOW
from storygen import SEED_PATH

STORY = "stories/2026-11-14/inference-throughput-race-kimi-deepseek/"
# A citation marker in index.md: [2], its brackets escaped (literal text, never a link).
MD_MARKER = r"\\\[(\d+)\\\]"


def number(link: lxml.html.HtmlElement) -> str:
    """The citation number of a marker link ("[2]" followed by the source's description)."""
    found = re.match(r"\[(\d+)\]", link.text_content())
    assert found, link.text_content()
    return found.group(1)


def test_every_text_appears_in_all_three_formats(desk, content: Path, tmp_path: Path) -> None:
    shutil.copy(SEED_PATH, content / "stories" / SEED_PATH.name)
    out = tmp_path / "public"
    assert desk("build", "--content", str(content), "--out", str(out), "--now", NOW).exit_code == 0
    html = lxml.html.fromstring((out / STORY / "index.html").read_bytes())
    markdown = (out / STORY / "index.md").read_text(encoding="utf-8")
    data = json.loads((out / STORY / "index.json").read_text(encoding="utf-8"))
    html_text = " ".join(html.text_content().split())

    texts = [data["headline"], data["dek"]] + [f["text"] for f in data["key_facts"]]
    texts += [p["markdown"] for s in data["sections"] for p in s["paragraphs"]]
    for text in texts:
        assert text in markdown
        assert " ".join(text.split()) in html_text

    # Same citation numbers, in the same order, for every key fact and paragraph.
    md_markers = []
    for fact in data["key_facts"]:
        line = next(line for line in markdown.splitlines() if fact["text"] in line)
        md_markers.append(re.findall(MD_MARKER, line))
    html_markers = [
        [number(a) for a in html.get_element_by_id(f"fact-{i}").cssselect("a.cite")]
        for i in range(1, len(data["key_facts"]) + 1)
    ]
    assert [sorted(m) for m in md_markers] == [sorted(m) for m in html_markers]

    paragraphs = [p for s in data["sections"] for p in s["paragraphs"]]
    anchors = [f"s{si}p{pi}" for si, s in enumerate(data["sections"], 1)
               for pi in range(1, len(s["paragraphs"]) + 1)]
    for paragraph, anchor in zip(paragraphs, anchors, strict=True):
        md_tail = markdown.split(paragraph["markdown"], 1)[1].split("\n", 1)[0]
        md_numbers = re.findall(MD_MARKER, md_tail)
        element = html.get_element_by_id(anchor)
        html_numbers = [number(a) for a in element.cssselect("a.cite")]
        assert md_numbers == html_numbers and html_numbers
        assert element.get("data-manifest") == " ".join(
            dict.fromkeys(c["manifest_id"] for c in paragraph["cites"]))

    # Each format links to the others.
    alternates = {link.get("type"): link.get("href") for link in html.cssselect('link[rel="alternate"]')}
    assert alternates["text/markdown"] == "/" + STORY + "index.md"
    assert alternates["application/json"] == "/" + STORY + "index.json"
    assert data["links"]["markdown"].endswith(STORY + "index.md")


def test_blocks_come_in_the_same_order_in_html_and_markdown(desk, content: Path,
                                                             tmp_path: Path) -> None:
    shutil.copy(SEED_PATH, content / "stories" / SEED_PATH.name)
    out = tmp_path / "public"
    assert desk("build", "--content", str(content), "--out", str(out), "--now", NOW).exit_code == 0
    html = lxml.html.fromstring((out / STORY / "index.html").read_bytes())
    html_order = [" ".join(h.text_content().split()) for h in html.cssselect("article h2")]
    markdown = (out / STORY / "index.md").read_text(encoding="utf-8")
    md_order = [line[3:] for line in markdown.splitlines() if line.startswith("## ")]
    # The decision card follows the key facts in both.
    assert html_order[:2] == md_order[:2] == ["Key facts", "Decision card"]
    shared = [h for h in html_order if h in md_order]
    assert shared == [h for h in md_order if h in html_order] and len(shared) >= 8
