"""A story's whole life through `desk build` and `desk serve`: drafts in the preview only,
moved stories redirecting from every old URL, withdrawn stories leaving a notice."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import feedparser
import lxml.html
from conftest import tree
from lxml import etree
from searchindex import searched_urls
from storygen import REPO, make_story, write_draft, write_story, write_withdrawal

from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.content.history import read_history_file
from desk.publish.linkcheck import check_links
from desk.serve.server import DevServer

NOW = "2026-11-15T00:00:00Z"
NOW_TIME = datetime(2026, 11, 15, tzinfo=UTC)
BASE = "https://hangingcontext.com"
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
ONE = "/stories/2026-11-14/story-number-1/"
TWO = "/stories/2026-11-14/story-number-2/"


def desk_build(desk: Any, content: Path, out: Path, *extra: str) -> Any:
    """`desk build` of content into out, with its own cache folder beside it."""
    return desk("build", "--content", str(content), "--out", str(out), "--cache-dir",
                str(out.parent / "cache"), "--now", NOW, "--no-search", *extra)


def config_for(content: Path, out: Path, **extra: object) -> Config:
    return load_config(REPO / "pyproject.toml", {
        "content_dir": content, "output_dir": out, "cache_dir": out.parent / "cache",
        "search": False, **extra})


def from_nothing(config: Config, site: Path, name: str) -> dict[str, bytes]:
    """A build without any cache, knowing only the URL history the site carries."""
    history, problems = read_history_file(site / ".well-known/desk-urls.json")
    assert not problems
    fresh = config.model_copy(update={"output_dir": site.parent / name})
    shutil.rmtree(fresh.output_dir, ignore_errors=True)
    assert build(fresh, Clock(NOW_TIME), cache=BuildCache(history=history)).ok
    return tree(fresh.output_dir)


@contextmanager
def preview(content: Path, out: Path) -> Iterator[DevServer]:
    """desk serve in this process, for a project whose `desk build` writes into out."""
    def load(base_url: str) -> Config:
        return load_config(REPO / "pyproject.toml", {
            "content_dir": content, "base_url": base_url, "output_dir": out,
            "cache_dir": out.parent / "cache"})

    dev = DevServer(load, ("127.0.0.1", 0), NOW_TIME, False, lambda line: None)
    try:
        report = dev.prepare("start")
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


def redirect_of(page: bytes) -> dict[str, str]:
    """What a redirect page says: where its refresh, canonical link and visible link go."""
    html = lxml.html.fromstring(page)
    refresh = html.cssselect('meta[http-equiv="refresh"]')[0].get("content")
    return {"refresh": refresh.split("url=", 1)[1],
            "canonical": html.cssselect('link[rel="canonical"]')[0].get("href"),
            "robots": html.cssselect('meta[name="robots"]')[0].get("content"),
            "link": html.cssselect("main a")[0].get("href")}


def sitemap_paths(site: Path) -> list[str]:
    root = etree.parse(str(site / "sitemap.xml")).getroot()
    return [loc.text.removeprefix(BASE) for loc in root.iter(f"{SITEMAP_NS}loc")]


def feed_entries(site: Path) -> dict[str, list[tuple[str, str]]]:
    """(entry id, link) of every entry of the site feed, in each format."""
    found = {}
    for name in ("feed.xml", "atom.xml"):
        parsed = feedparser.parse((site / name).read_bytes())
        assert not parsed.bozo
        found[name] = [(e.id, e.link) for e in parsed.entries]
    items = json.loads((site / "feed.json").read_text())["items"]
    found["feed.json"] = [(item["id"], item["url"]) for item in items]
    return found


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
        assert dev.prepare("promoted").ok
        page = lxml.html.fromstring(get(dev, TWO)[1])
        assert not page.cssselect(".draft-note")
        assert page.cssselect('meta[name="robots"]')[0].get("content").startswith(
            "max-image-preview:large")
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


def test_moves_redirect_every_old_url_to_the_newest(desk, tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1), "one.json")
    write_story(content, make_story(2), "two.json")
    assert desk_build(desk, content, out).exit_code == 0
    # The story's entry id in each feed format, by its link.
    entry_ids = {name: {link: entry_id for entry_id, link in entries}[BASE + ONE]
                 for name, entries in feed_entries(out).items()}
    once = "/stories/2026-11-14/renamed-once/"
    final = "/stories/2026-11-13/renamed-twice/"
    write_story(content, make_story(1, slug="renamed-once"), "one.json")  # a slug change
    assert desk_build(desk, content, out).exit_code == 0
    assert redirect_of((out / ONE.strip("/") / "index.html").read_bytes())["link"] == once
    # A second move, to another day: both old URLs redirect to the final one.
    (content / "stories/2026-11-14/one.json").unlink()
    write_story(content, make_story(1, slug="renamed-twice",
                                    published_at=datetime(2026, 11, 13, 12, 1, tzinfo=UTC)),
                "one.json")
    report = tmp_path / "report.json"
    assert desk_build(desk, content, out, "--report", str(report)).exit_code == 0
    files = tree(out)
    for old in (ONE, once):
        assert [f for f in files if f.startswith(old[1:])] == [old[1:] + "index.html"]
        assert redirect_of(files[old[1:] + "index.html"]) == {
            "refresh": final, "canonical": BASE + final, "robots": "noindex", "link": final}
    assert [(r["from"], r["to"]) for r in json.loads(report.read_text())["redirects"]] == [
        (once, final), (ONE, final)]

    # Only the new URL is listed anywhere; feeds keep the story's entry id.
    assert final in sitemap_paths(out) and not {ONE, once} & set(sitemap_paths(out))
    for name, entries in feed_entries(out).items():
        assert entry_ids[name] == "tag:hangingcontext.com,2026:stories/10001"
        links = [link for entry_id, link in entries if entry_id == entry_ids[name]]
        assert links == [BASE + final] and len(entries) == 2, name
    listed = [s["url"] for s in json.loads((out / "index.json").read_text())["stories"]]
    listed += [s["url"] for s in json.loads(
        (out / "n/artificial-intelligence/index.json").read_text())["stories"]]
    assert BASE + final in listed and not {BASE + ONE, BASE + once} & set(listed)
    llms = (out / "llms.txt").read_text()
    assert f"{BASE}{final}index.md" in llms and ONE not in llms and once not in llms
    assert check_links(out, config_for(content, out)) == []
    assert files == from_nothing(config_for(content, out), out, "fresh")

    # A redirect never takes a live story's place: a new story at the first old URL.
    write_story(content, make_story(3, slug="story-number-1"), "three.json")
    assert desk_build(desk, content, out).exit_code == 0
    page = lxml.html.fromstring((out / ONE.strip("/") / "index.html").read_bytes())
    assert page.cssselect("h1")[0].text == "Headline of story 3"
    assert redirect_of((out / once.strip("/") / "index.html").read_bytes())["link"] == final
    assert tree(out) == from_nothing(config_for(content, out), out, "fresh")


def test_a_fresh_runner_reads_the_url_history_back_from_the_last_deploy(
        desk, tmp_path: Path) -> None:
    content, first = tmp_path / "content", tmp_path / "runner-1" / "public"
    write_story(content, make_story(1), "one.json")
    assert desk_build(desk, content, first).exit_code == 0
    write_story(content, make_story(1, slug="renamed"), "one.json")
    assert desk_build(desk, content, first).exit_code == 0
    # Another runner: no cache, no output folder, only a copy of the deployed history.
    deployed = tmp_path / "desk-urls.json"
    shutil.copy(first / ".well-known/desk-urls.json", deployed)
    second = tmp_path / "runner-2" / "public"
    write_story(content, make_story(2), "two.json")
    result = desk_build(desk, content, second, "--url-history", str(deployed))
    assert result.exit_code == 0, result.stderr
    assert redirect_of((second / ONE.strip("/") / "index.html").read_bytes())["link"] == (
        "/stories/2026-11-14/renamed/")
    # Without it, the old URL is forgotten.
    third = tmp_path / "runner-3" / "public"
    assert desk_build(desk, content, third).exit_code == 0
    assert not (third / ONE.strip("/")).exists()
    deployed.write_text('{"version": 1, "stories": {"1": ["/etc/"]}}')
    refused = desk_build(desk, content, tmp_path / "runner-4" / "public",
                         "--url-history", str(deployed))
    assert refused.exit_code == 1
    assert f"{deployed}: /stories/1/0: not a desk URL history" in refused.stderr


def test_a_withdrawal_taken_back_brings_the_story_back_from_its_untouched_file(
        tmp_path: Path) -> None:
    # The last build left a unit at the story's URL (the notice) and the story's file is
    # the one it read: nothing but the withdrawal tells that the story's key changed.
    content, out = tmp_path / "content", tmp_path / "public"
    for n in (1, 2, 3):
        write_story(content, make_story(n), f"{n}.json")
    config = config_for(content, out)
    assert build(config, Clock(NOW_TIME)).ok
    write_withdrawal(content, "10002", reason="Checked again.")
    assert build(config, Clock(NOW_TIME)).ok
    assert_notice(tree(out), TWO, "Checked again.")
    (content / "withdrawn/10002.json").unlink()
    assert build(config, Clock(NOW_TIME)).ok
    assert b"Headline of story 2" in (out / TWO.strip("/") / "index.html").read_bytes()
    assert tree(out) == from_nothing(config, out, "fresh")


def test_a_withdrawal_leaves_a_notice_and_the_story_nowhere_else(desk, tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    for n in (1, 2, 3):
        write_story(content, make_story(n), f"{n}.json")
    config = config_for(content, out, search=True)
    assert build(config, Clock(NOW_TIME)).ok
    assert TWO in searched_urls(out)
    write_withdrawal(content, "10002", reason="The figures came from a retracted report.")
    report = build(config, Clock(NOW_TIME))
    assert report.ok and [(n.id, n.path) for n in report.withdrawn] == [("10002", TWO)]
    files = tree(out)
    assert_notice(files, TWO, "The figures came from a retracted report.")
    for name, data in files.items():
        assert b"Headline of story 2" not in data, name
        if not name.startswith(TWO[1:]) and name != ".well-known/desk-urls.json":
            assert TWO.encode() not in data and b"10002" not in data, name
    assert TWO not in searched_urls(out) and ONE in searched_urls(out)

    # The story file deleted: the notice stays where readers knew the story.
    story = content / "stories/2026-11-14/2.json"
    kept = story.read_bytes()
    story.unlink()
    assert build(config.model_copy(update={"search": False}), Clock(NOW_TIME)).ok
    assert_notice(tree(out), TWO, "The figures came from a retracted report.")
    assert tree(out) == from_nothing(config.model_copy(update={"search": False}), out,
                                     "fresh")
    # The withdrawal removed, the story back: it is published again.
    story.write_bytes(kept)
    (content / "withdrawn/10002.json").unlink()
    assert build(config.model_copy(update={"search": False}), Clock(NOW_TIME)).ok
    assert b"Headline of story 2" in (out / TWO.strip("/") / "index.html").read_bytes()

    # A runner with neither the cache nor the site: only the deployed history knows it.
    deployed = tmp_path / "desk-urls.json"
    shutil.copy(out / ".well-known/desk-urls.json", deployed)
    story.unlink()
    write_withdrawal(content, "10002")
    elsewhere = ["check", "--content", str(content), "--config", str(tmp_path / "x.toml")]
    (tmp_path / "x.toml").write_text('base_url = "https://hangingcontext.com"\n'
                                     'output_dir = "elsewhere"\n')
    assert desk(*elsewhere).exit_code == 1
    assert desk(*elsewhere, "--url-history", str(deployed)).exit_code == 0

    # Withdrawing an id no story ever had is an error naming the file.
    unknown = write_withdrawal(content, "no-such-story")
    result = desk_build(desk, content, out)
    assert result.exit_code == 1
    assert (f"{unknown}: /id: no story has id 'no-such-story': none in the content, and "
            "none was ever published under it") in result.stderr


def assert_notice(files: dict[str, bytes], path: str, reason: str) -> None:
    """The withdrawal notice, in the three formats of the story it replaced."""
    folder = path[1:]
    assert sorted(f for f in files if f.startswith(folder)) == [
        folder + "index.html", folder + "index.json", folder + "index.md"]
    page = lxml.html.fromstring(files[folder + "index.html"])
    assert page.cssselect("h1")[0].text == "This story was withdrawn"
    assert reason in page.cssselect(".reason")[0].text_content()
    assert not page.xpath("//*[@data-pagefind-body]")
    assert page.cssselect('meta[name="robots"]')[0].get("content") == "noindex"
    data = json.loads(files[folder + "index.json"])
    assert data["type"] == "withdrawal" and data["reason"] == reason
    assert data["url"] == BASE + path and data["withdrawn_at"] == "2026-11-15T09:00:00Z"
    assert f"Reason: {reason}" in files[folder + "index.md"].decode()


def test_the_preview_redirects_and_gives_notice_like_the_build(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    for n in (1, 2, 3):
        write_story(content, make_story(n), f"{n}.json")
    assert build(config_for(content, out), Clock(NOW_TIME)).ok
    # Since the last build, story 3 moved, and story 2 was deleted and withdrawn: only the
    # built site's history knows their URLs, and the preview starts from it.
    write_story(content, make_story(3, slug="renamed-before"), "3.json")
    (content / "stories/2026-11-14/2.json").unlink()
    write_withdrawal(content, "10002")
    with preview(content, out) as dev:
        status, body = get(dev, TWO)
        assert status == 200 and b"This story was withdrawn" in body
        assert redirect_of(get(dev, "/stories/2026-11-14/story-number-3/")[1])["link"] == (
            "/stories/2026-11-14/renamed-before/")
        write_story(content, make_story(1, slug="renamed"), "1.json")
        assert dev.prepare("moved").ok
        moved = redirect_of(get(dev, ONE)[1])
        assert moved["refresh"] == moved["link"] == "/stories/2026-11-14/renamed/"
        assert get(dev, ONE + "index.json")[0] == 404
