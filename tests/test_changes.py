"""Typed changes: a story's change records (a correction, a clarification, an update, an
editor's note) are named as such on its page, in its Markdown, in the story feeds, in the
corrections log and its feeds; JSON-LD's `correction` holds the corrections alone, and
`dateModified` follows every kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import feedparser
import lxml.html
import pytest
from click.testing import CliRunner
from storygen import REPO, make_story, write_story

from desk.cli import main

NOW = "2026-11-20T00:00:00Z"
BASE = "https://hangingcontext.com"
STORY = "stories/2026-11-14/story-number-1/"
CHANGES = [
    {"at": "2026-11-15T09:00:00Z", "text": "The figure was 40, not 14."},
    {"at": "2026-11-16T09:00:00Z", "text": "Throughput means output tokens per second.",
     "kind": "clarification"},
    {"at": "2026-11-17T09:00:00Z", "text": "The host answered our questions.",
     "kind": "update"},
    {"at": "2026-11-18T09:00:00Z", "text": "This story was written from two sources.",
     "kind": "editors-note"},
]
# Newest first, as every list of them is.
SHOWN = [("Editor's note", "This story was written from two sources."),
         ("Update", "The host answered our questions."),
         ("Clarification", "Throughput means output tokens per second."),
         ("Correction", "The figure was 40, not 14.")]


def build(content: Path, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["build", "--config", str(REPO / "pyproject.toml"),
                                     "--content", str(content), "--out", str(out),
                                     "--now", NOW, "--no-search", *extra])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("changes")
    write_story(root / "content", make_story(1, corrections=CHANGES))
    write_story(root / "content", make_story(2))
    result = build(root / "content", root / "public")
    assert result.exit_code == 0, result.output
    return root / "public"


def test_the_page_names_each_kind(site: Path) -> None:
    html = lxml.html.fromstring((site / STORY / "index.html").read_bytes())
    section = html.cssselect("section.corrections")[0]
    assert section.findtext("h2") == "Changes"
    shown = [(li.cssselect(".change-kind")[0].text_content(), li.get("class"))
             for li in section.cssselect("li")]
    assert shown == [("Editor's note", "change change-editors-note"),
                     ("Update", "change change-update"),
                     ("Clarification", "change change-clarification"),
                     ("Correction", "change change-correction")]
    markdown = (site / STORY / "index.md").read_text()
    assert "## Changes\n\n" in markdown
    for label, text in SHOWN:
        assert f"- **{label}**, " in markdown and text in markdown


def test_json_ld_corrects_with_corrections_only(site: Path) -> None:
    html = lxml.html.fromstring((site / STORY / "index.html").read_bytes())
    data = json.loads(html.cssselect('script[type="application/ld+json"]')[0].text)
    article = next(d for d in data["@graph"] if d["@type"] == "NewsArticle") \
        if "@graph" in data else data
    assert [c["text"] for c in article["correction"]] == ["The figure was 40, not 14."]
    # The editor's note is the latest change: the story's modification, though no correction.
    assert article["dateModified"] == "2026-11-18T09:00:00Z"


def test_the_story_feeds_name_each_kind(site: Path) -> None:
    for name in ("feed.xml", "atom.xml"):
        parsed = feedparser.parse((site / name).read_bytes())
        assert not parsed.bozo, parsed.bozo_exception
        entry = next(e for e in parsed.entries if e.link == f"{BASE}/{STORY}")
        content = lxml.html.fromstring(entry.content[0].value if "content" in entry
                                       else entry.summary)
        items = [li.text_content() for li in content.xpath("//li[strong]")]
        assert [(i.split(",")[0], i.split(": ", 1)[1].strip()) for i in items] == SHOWN, name
    item = next(i for i in json.loads((site / "feed.json").read_bytes())["items"]
                if i["url"] == f"{BASE}/{STORY}")
    assert "<strong>Changes:</strong>" in item["content_html"]
    assert "<li><strong>Clarification</strong>, " in item["content_html"]


def test_the_log_and_its_feeds_name_each_kind(site: Path) -> None:
    data = json.loads((site / "corrections/index.json").read_bytes())
    assert [(c["kind"], c["text"]) for c in data["corrections"]] == [
        ("editors-note", SHOWN[0][1]), ("update", SHOWN[1][1]),
        ("clarification", SHOWN[2][1]), ("correction", SHOWN[3][1])]
    html = lxml.html.fromstring((site / "corrections/index.html").read_bytes())
    assert [e.text_content() for e in html.cssselect(".corrections-log .change-kind")] == [
        label for label, _ in SHOWN]
    markdown = (site / "corrections/index.md").read_text()
    assert "- **Clarification**, " in markdown and "- **Update**, " in markdown
    atom = feedparser.parse((site / "corrections/atom.xml").read_bytes())
    assert not atom.bozo, atom.bozo_exception
    assert [e.title for e in atom.entries] == [f"{label}: Headline of story 1"
                                               for label, _ in SHOWN]
    assert [e.tags[0].term for e in atom.entries] == [
        "editors-note", "update", "clarification", "correction"]
    items = json.loads((site / "corrections/feed.json").read_bytes())["items"]
    assert [(i["title"], i["tags"]) for i in items] == [
        (f"{label}: Headline of story 1", [label]) for label, _ in SHOWN]


def test_a_story_with_corrections_alone_reads_as_before(tmp_path: Path) -> None:
    """A change record without a kind is a correction: the list is "Corrections"."""
    write_story(tmp_path / "content", make_story(1, corrections=CHANGES[:1]))
    assert build(tmp_path / "content", tmp_path / "public").exit_code == 0
    html = lxml.html.fromstring((tmp_path / "public" / STORY / "index.html").read_bytes())
    assert html.cssselect("section.corrections h2")[0].text == "Corrections"
    assert html.cssselect("section.corrections .change-kind")[0].text == "Correction"


# Silent edits: a published story's text changed with no new change record.

def edited(story: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The story with its first paragraph edited (and any other changes)."""
    again = json.loads(json.dumps(story))
    paragraph = again["sections"][0]["paragraphs"][0]
    paragraph["markdown"] += " A sentence added later."
    return again | changes


def settings(root: Path, **extra: str) -> Path:
    lines = ['base_url = "https://hangingcontext.com"', 'content_dir = "content"',
             'output_dir = "public"', 'cache_dir = "cache"',
             *(f'{key} = "{value}"' for key, value in extra.items()),
             "[reuse]", 'summary = "Free to quote."']
    (root / "desk.toml").write_text("\n".join(lines) + "\n")
    return root / "desk.toml"


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def site_args(root: Path, config: Path) -> list[str]:
    return ["--config", str(config)]


def test_an_edit_with_no_change_record_is_told_until_published(tmp_path: Path) -> None:
    config = settings(tmp_path)
    args = site_args(tmp_path, config)
    out = ["--now", NOW, "--no-search"]
    story = make_story(1)
    path = write_story(tmp_path / "content", story)
    write_story(tmp_path / "content", make_story(2))
    assert run("build", *args, *out).exit_code == 0
    history = json.loads((tmp_path / "public/.well-known/desk-urls.json").read_bytes())
    assert history["version"] == 2 and set(history["published"]) == {"10001", "10002"}
    # A change that is not the text (its trust label) is no silent edit.
    write_story(tmp_path / "content", story | {"labels": {"trust": "reported"}})
    checked = run("check", *args)
    assert checked.exit_code == 0 and "silent-edit" not in checked.output
    write_story(tmp_path / "content", edited(story))
    checked = run("check", *args)
    assert checked.exit_code == 0  # a warning
    assert (f"{path}: /corrections: [silent-edit] the text of this story changed since it was "
            "published at /stories/2026-11-14/story-number-1/, with no new change record"
            ) in checked.output
    assert checked.output.count("silent-edit") == 1  # story 2 is as published
    built = run("build", *args, *out, "--report", str(tmp_path / "report.json"))
    assert built.exit_code == 0
    report = json.loads((tmp_path / "report.json").read_bytes())
    assert [w["code"] for w in report["warnings"] if w["code"] == "silent-edit"] == [
        "silent-edit"]
    assert "A sentence added later." in (tmp_path / "public" / STORY / "index.html").read_text()
    # Published as it is now: told no more.
    checked = run("check", *args)
    assert checked.exit_code == 0 and "silent-edit" not in checked.output


def test_an_edit_with_a_change_record_is_not_told(tmp_path: Path) -> None:
    config = settings(tmp_path)
    args = site_args(tmp_path, config)
    story = make_story(1, corrections=CHANGES[:1])
    write_story(tmp_path / "content", story)
    assert run("build", *args, "--now", NOW).exit_code == 0
    write_story(tmp_path / "content", edited(story, corrections=CHANGES[:2]))
    checked = run("check", *args)
    assert checked.exit_code == 0 and "silent-edit" not in checked.output


def test_as_an_error_the_edit_is_refused_and_held_back(tmp_path: Path) -> None:
    config = settings(tmp_path, silent_edits="error")
    args = site_args(tmp_path, config)
    out = ["--now", NOW, "--no-search"]
    story = make_story(1)
    write_story(tmp_path / "content", story)
    write_story(tmp_path / "content", make_story(2))
    assert run("build", *args, *out).exit_code == 0
    page = (tmp_path / "public" / STORY / "index.html").read_bytes()
    write_story(tmp_path / "content", edited(story))
    checked = run("check", *args)
    assert checked.exit_code == 1 and "/corrections: [silent-edit]" in checked.output
    refused = run("build", *args, *out)
    assert refused.exit_code == 1
    held = run("build", *args, *out, "--hold-back")
    assert held.exit_code == 3, held.output
    assert "Held back" in held.output and "[silent-edit]" in held.output
    assert (tmp_path / "public" / STORY / "index.html").read_bytes() == page
    # Held back, it is told again on the next build: its last publish is the old one.
    assert run("build", *args, *out, "--hold-back").exit_code == 3
    # With a change record saying what changed, it is published.
    write_story(tmp_path / "content", edited(story, corrections=[
        {"at": "2026-11-19T09:00:00Z", "text": "A sentence was added.", "kind": "update"}]))
    assert run("build", *args, *out, "--hold-back").exit_code == 0
    assert "A sentence added later." in (tmp_path / "public" / STORY / "index.html").read_text()


def test_a_fresh_runner_knows_the_last_publish_from_the_url_history(tmp_path: Path) -> None:
    """No cache and no site: the last deploy's desk-urls.json (--url-history) carries the
    record of each publish."""
    config = settings(tmp_path)
    story = make_story(1)
    write_story(tmp_path / "content", story)
    assert run("build", *site_args(tmp_path, config), "--now", NOW).exit_code == 0
    kept = tmp_path / "desk-urls.json"
    kept.write_bytes((tmp_path / "public/.well-known/desk-urls.json").read_bytes())
    write_story(tmp_path / "content", edited(story))
    fresh = run("build", "--config", str(config), "--out", str(tmp_path / "fresh"),
                "--no-cache", "--url-history", str(kept), "--now", NOW)
    assert fresh.exit_code == 0
    assert "/corrections: the text of this story changed since it was published" in fresh.output
