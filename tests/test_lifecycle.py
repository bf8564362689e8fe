"""A story's life through `desk build` and `desk serve`: drafts in the preview only."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lxml.html
from conftest import tree
from storygen import REPO, make_story, write_draft, write_story

from desk.config import Config, load_config
from desk.serve import DevServer

NOW = "2026-11-15T00:00:00Z"
NOW_TIME = datetime(2026, 11, 15, tzinfo=UTC)
TWO = "/stories/2026-11-14/story-number-2/"


def desk_build(desk: Any, content: Path, out: Path, *extra: str) -> Any:
    """`desk build` of content into out, with its own cache folder beside it."""
    return desk("build", "--content", str(content), "--out", str(out), "--cache-dir",
                str(out.parent / "cache"), "--now", NOW, "--no-search", *extra)


@contextmanager
def preview(content: Path, out: Path) -> Iterator[DevServer]:
    """desk serve in this process, for a project whose `desk build` writes into out."""
    def load(base_url: str) -> Config:
        return load_config(REPO / "pyproject.toml", {
            "content_dir": content, "base_url": base_url, "output_dir": out,
            "cache_dir": out.parent / "cache"})

    dev = DevServer(load, ("127.0.0.1", 0), NOW_TIME, False, lambda line: None)
    try:
        report = dev.rebuild("start")
        assert report is not None and report.ok, report and report.findings
        dev.start()
        yield dev
    finally:
        dev.stop()


def get(dev: DevServer, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(dev.base_url + path, timeout=20) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_a_draft_is_in_the_preview_and_nowhere_in_the_built_site(desk, tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1))
    draft = write_draft(content, make_story(2, headline="Unapproved scoop"),
                        "agent-run/deeper/scoop.json")  # any depth
    report = tmp_path / "report.json"
    assert desk_build(desk, content, out, "--report", str(report)).exit_code == 0
    for name, data in tree(out).items():
        assert b"story-number-2" not in data and b"Unapproved scoop" not in data, name
        assert b"10002" not in data, name
    assert [d["path"] for d in json.loads(report.read_text())["drafts_skipped"]] == [
        str(draft)]

    with preview(content, out) as dev:
        status, body = get(dev, TWO)
        page = lxml.html.fromstring(body)
        assert status == 200 and page.cssselect("h1")[0].text == "Unapproved scoop"
        assert "Draft" in page.cssselect(".draft-note")[0].text_content()
        assert page.cssselect('meta[name="robots"]')[0].get("content") == "noindex"
        front = lxml.html.fromstring(get(dev, "/")[1])
        badges = [card.cssselect("h3 a")[0].get("href") for card in front.cssselect(".card")
                  if card.cssselect(".draft-badge")]
        assert badges == [TWO]
        listing = json.loads(get(dev, "/n/artificial-intelligence/index.json")[1])
        assert {s["id"]: s.get("draft", False) for s in listing["stories"]} == {
            "10002": True, "10001": False}
        assert b"draft: true" in get(dev, TWO + "index.md")[1]

        # Moving the file out of drafts/ publishes it: unmarked in the preview and built.
        promoted = content / "stories" / "scoop.json"
        draft.rename(promoted)
        assert dev.rebuild("promoted", content_only=True).ok
        page = lxml.html.fromstring(get(dev, TWO)[1])
        assert not page.cssselect(".draft-note") and not page.cssselect('meta[name="robots"]')
        assert b"draft-badge" not in get(dev, "/")[1]
    assert desk_build(desk, content, out).exit_code == 0
    assert b"Unapproved scoop" in (out / TWO.strip("/") / "index.html").read_bytes()
    assert b"draft" not in (out / TWO.strip("/") / "index.html").read_bytes()


def test_drafts_are_checked_and_reported_apart(desk, tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1))
    broken = make_story(2)
    broken["cited_manifest_ids"] = []
    draft = write_draft(content, broken, "broken.json")
    write_draft(content, make_story(3, id="10001"), "twin.json")  # a published story's id
    result = desk("check", "--content", str(content))
    assert result.exit_code == 0  # drafts are not published: they never fail the check
    assert result.stdout.splitlines() == [
        f"{draft}: /cited_manifest_ids: [cited-ids-mismatch] lists [] but the story cites "
        "[900000201, 900000202]",
        f"{content / 'drafts/twin.json'}: /id: [duplicate-id] id '10001' is also the id of "
        f"{content / 'stories/2026-11-14/story-number-1.json'}",
    ]
    assert ("1 stories and 2 drafts checked: 0 error(s), 0 warning(s); in drafts (not "
            "published, so not failing the check): 2 error(s), 0 warning(s)") in result.stderr
    listed = json.loads(desk("check", "--content", str(content), "--format", "json").stdout)
    assert [f.get("draft") for f in listed] == [True, True]
    assert desk_build(desk, content, out).exit_code == 0  # the drafts are skipped
    refused = desk_build(desk, content, out, "--drafts")
    assert refused.exit_code == 1 and str(draft) in refused.stderr
