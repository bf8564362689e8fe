"""The newsroom's own pages and trust in machine form: pages in HTML, Markdown and JSON,
the publisher's policies in every story's JSON-LD and in /.well-known/publisher.json,
and bad pages refused with one finding each, the site left as it was."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import extruct
import feedparser
import lxml.html
import pytest
from click.testing import CliRunner
from pyld import jsonld
from storygen import (
    NEWSROOM_PAGES,
    REPO,
    make_story,
    write_pages,
    write_story,
    write_withdrawal,
)
from test_publish import nu_errors
from test_reader import FAILING_IMPACTS, QuietHandler, browser  # noqa: F401 (a fixture)

from desk.cli import main
from desk.config import load_config
from desk.publish.linkcheck import check_links

NOW = "2026-11-20T00:00:00Z"
BASE = "https://hangingcontext.com"
SCHEMA = "https://schema.org/"
POLICIES = {"masthead": "/about/", "publishingPrinciples": "/policies/principles/",
            "correctionsPolicy": "/policies/corrections/", "ethicsPolicy": "/policies/ethics/"}


def build(content: Path, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["build", "--config", str(REPO / "pyproject.toml"),
                                     "--content", str(content), "--out", str(out),
                                     "--now", NOW, "--no-search", *extra])


def newsroom_content(content: Path) -> None:
    """Stories over three beats and two agents, with five corrections, and the pages."""
    beats = ("infrastructure", "models", "policy")
    for n in range(1, 7):
        corrections = ([{"at": f"2026-11-1{5 + n % 3}T0{n}:{k}0:00Z",
                         "text": f"Correction {k} of story {n}."} for k in range(1, 3)]
                       if n in (1, 2) else
                       [{"at": "2026-11-16T09:00:00Z", "text": f"Correction of story {n}."}]
                       if n == 3 else [])
        write_story(content, make_story(
            n, beat=beats[n % 3], corrections=corrections,
            writer={"agent": ("desk-writer", "desk-editor")[n % 2], "run_id": f"run-{n}"}))
    write_pages(content)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("newsroom")
    newsroom_content(root / "content")
    result = build(root / "content", root / "public", "--no-cache")
    assert result.exit_code == 0, result.output
    return root / "public"


def offline_loader(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """schema.org's context, offline: every term in its vocabulary, URLs as @id."""
    assert url.rstrip("/") in ("https://schema.org", "http://schema.org"), url
    ids = ("url", "logo", *POLICIES)
    context = {"@vocab": SCHEMA, **{k: {"@id": SCHEMA + k, "@type": "@id"} for k in ids}}
    return {"contentType": "application/ld+json", "contextUrl": None, "documentUrl": url,
            "document": {"@context": context}}


def policies_of(document: dict[str, Any]) -> dict[str, str]:
    """The policy pages of the NewsMediaOrganization in a JSON-LD document, expanded."""
    expanded = jsonld.expand(document, {"documentLoader": offline_loader})

    def walk(node: Any) -> dict[str, str]:
        if isinstance(node, list):
            return next((found for n in node if (found := walk(n))), {})
        if not isinstance(node, dict):
            return {}
        if SCHEMA + "NewsMediaOrganization" in node.get("@type", []):
            return {k[len(SCHEMA):]: v[0]["@id"] for k, v in node.items()
                    if k[len(SCHEMA):] in POLICIES}
        return next((found for v in node.values() if (found := walk(v))), {})

    return walk(expanded)


def test_every_page_in_html_markdown_and_json(site: Path) -> None:
    for name, (title, _, policy) in NEWSROOM_PAGES.items():
        folder = site / name.removesuffix(".md")
        html = lxml.html.fromstring((folder / "index.html").read_bytes())
        assert html.findtext(".//h1") == title
        assert html.xpath("//main//ul/li/text()") == ["one", "two"]
        assert html.xpath('//main//a[@href="https://example.org/"]')
        markdown = (folder / "index.md").read_text()
        assert f"# {title}\n" in markdown and "- one\n- two\n" in markdown
        data = json.loads((folder / "index.json").read_bytes())
        assert data["title"] == title and data["policy"] == policy
        assert data["url"] == f"{BASE}/{name.removesuffix('.md')}/"


def test_pages_in_sitemap_llms_and_footer_in_nav_order(site: Path) -> None:
    sitemap = (site / "sitemap.xml").read_text()
    llms = (site / "llms.txt").read_text()
    for path in POLICIES.values():
        assert f"<loc>{BASE}{path}</loc>" in sitemap
        assert f"({BASE}{path}index.md)" in llms
    footer = lxml.html.fromstring((site / "index.html").read_bytes()).xpath(
        '//footer//nav[@aria-label="About this site"]//a')
    # In nav order; the ethics policy has none, so it is not in the navigation.
    assert [(a.text, a.get("href")) for a in footer] == [
        ("About", "/about/"), ("Publishing principles", "/policies/principles/"),
        ("Corrections policy", "/policies/corrections/")]


def test_json_ld_of_every_story_names_the_policies(site: Path) -> None:
    stories = sorted(site.glob("stories/*/*/index.html"))
    assert len(stories) == 6
    for page in stories:
        found = extruct.extract(page.read_text(), base_url=BASE, syntaxes=["json-ld"])
        (article,) = found["json-ld"]
        assert article["@type"] == "NewsArticle"
        assert policies_of(article) == {k: BASE + v for k, v in POLICIES.items()}
    corrected = extruct.extract(
        (site / "stories/2026-11-14/story-number-1/index.html").read_text(),
        syntaxes=["json-ld"])["json-ld"][0]
    assert [c["@type"] for c in corrected["correction"]] == ["CorrectionComment"] * 2


def test_well_known_publisher_document(site: Path) -> None:
    document = json.loads((site / ".well-known/publisher.json").read_bytes())
    assert document["@type"] == "NewsMediaOrganization" and document["url"] == BASE + "/"
    assert policies_of(document) == {k: BASE + v for k, v in POLICIES.items()}


def test_site_with_pages_is_valid_html_and_its_links_resolve(site: Path) -> None:
    assert check_links(site, load_config(REPO / "pyproject.toml")) == []
    errors = nu_errors(site)
    assert errors == [], "\n".join(f"{e.get('url')}:{e.get('lastLine')}: {e['message']}"
                                    for e in errors)


BEATS = ("infrastructure", "models", "policy")
AGENTS = ("desk-editor", "desk-writer")


def listed(site: Path, folder: str) -> list[dict[str, Any]]:
    """The entries of a list page's index.json, over all its pages, newest first."""
    data = json.loads((site / folder / "index.json").read_bytes())
    entries = list(data.get("stories", data.get("corrections", [])))
    while data.get("next"):
        data = json.loads((site / data["next"].removeprefix(BASE + "/") / "index.json")
                          .read_bytes())
        entries += data.get("stories", data.get("corrections", []))
    return entries


def parse_feed(path: Path) -> Any:
    """A feed as feedparser reads it; a JSON Feed (which feedparser does not read) checked
    for JSON Feed 1.1's required fields and given in feedparser's shape."""
    if path.suffix != ".json":
        return feedparser.parse(path.read_bytes())
    data = json.loads(path.read_bytes())
    assert data["version"] == "https://jsonfeed.org/version/1.1" and data["title"]
    assert all(item["id"] and (item.get("content_html") or item.get("content_text"))
               for item in data["items"])
    return feedparser.FeedParserDict(bozo=False, entries=[
        feedparser.FeedParserDict(id=item["id"], link=item["url"]) for item in data["items"]])


NEW_LISTS = ("n/artificial-intelligence/beats/models", "agents", "agents/desk-writer",
             "corrections")


def test_every_new_list_page_in_html_markdown_and_json(site: Path) -> None:
    for folder in NEW_LISTS:
        html = lxml.html.fromstring((site / folder / "index.html").read_bytes())
        data = json.loads((site / folder / "index.json").read_bytes())
        markdown = (site / folder / "index.md").read_text()
        assert markdown.startswith("---\ntitle: ") and f"\n# {data['title']}\n" in markdown
        assert html.findtext(".//h1") == data["title"]
        for entry in data.get("stories", data.get("corrections", data.get("agents", []))):
            assert f"]({entry['url']})" in markdown


def test_a_page_per_beat_newest_first_with_its_feeds(site: Path) -> None:
    for n, beat in enumerate(BEATS):
        folder = f"n/artificial-intelligence/beats/{beat}"
        want = [str(10_000 + k) for k in range(6, 0, -1) if k % 3 == n]
        assert [e["id"] for e in listed(site, folder)] == want
        html = lxml.html.fromstring((site / folder / "index.html").read_bytes())
        assert [a.text for a in html.xpath('//nav[@class="breadcrumbs"]//a')] == [
            "Hanging Context", "Newsrooms", "Artificial Intelligence"]
        for kind in ("feed.xml", "atom.xml", "feed.json"):
            parsed = parse_feed(site / folder / kind)
            assert not parsed.bozo, (kind, parsed.bozo_exception)
            assert [e.link.split("/")[-2] for e in parsed.entries] == [
                f"story-number-{k}" for k in range(6, 0, -1) if k % 3 == n]


def test_the_story_page_links_its_beat_and_names_its_agent(site: Path) -> None:
    page = site / "stories/2026-11-14/story-number-1/index.html"
    html = lxml.html.fromstring(page.read_bytes())
    # The agent wrote it and is named as its writer; the publisher is its author.
    assert html.xpath('//meta[@name="author"]/@content') == ["Hanging Context"]
    assert html.xpath('//p[@class="made-by"]//a/@href')[0] == "/agents/desk-editor/"
    assert not html.xpath('//a[@rel="author"]')
    crumbs = html.xpath('//nav[@class="breadcrumbs"]//a')
    assert [(a.text, a.get("href")) for a in crumbs][1:] == [
        ("Artificial Intelligence", "/n/artificial-intelligence/"),
        ("Models", "/n/artificial-intelligence/beats/models/")]
    (article,) = extruct.extract(page.read_text(), syntaxes=["json-ld"])["json-ld"]
    assert article["contributor"][0]["name"] == "desk-editor"
    assert article["contributor"][0]["url"] == BASE + "/agents/desk-editor/"
    assert article["author"] == [{"@type": "NewsMediaOrganization", "name": "Hanging Context",
                                  "url": BASE + "/"}]


def test_a_page_per_agent_with_each_story_s_run(site: Path) -> None:
    for n, agent in enumerate(AGENTS):
        entries = listed(site, f"agents/{agent}")
        numbers = [k for k in range(6, 0, -1) if k % 2 != n]
        assert [(e["id"], e["run_id"]) for e in entries] == [
            (str(10_000 + k), f"run-{k}") for k in numbers]
        text = (site / f"agents/{agent}/index.html").read_text()
        assert all(f"Run run-{k}" in text for k in numbers)
    index = json.loads((site / "agents/index.json").read_bytes())
    assert [a["agent"] for a in index["agents"]] == list(AGENTS)


def test_the_corrections_log_newest_first_with_its_feeds(site: Path) -> None:
    entries = listed(site, "corrections")
    assert len(entries) == 5
    assert [e["at"] for e in entries] == sorted((e["at"] for e in entries), reverse=True)
    assert {e["text"] for e in entries} == {
        "Correction 1 of story 1.", "Correction 2 of story 1.", "Correction 1 of story 2.",
        "Correction 2 of story 2.", "Correction of story 3."}
    for entry in entries:
        assert entry["url"].startswith(BASE + "/stories/2026-11-14/story-number-")
    for kind in ("atom.xml", "feed.json"):
        parsed = parse_feed(site / "corrections" / kind)
        assert not parsed.bozo, (kind, parsed.bozo_exception)
        assert len(parsed.entries) == 5 and len({e.id for e in parsed.entries}) == 5
        assert parsed.entries[0].link == entries[0]["url"]


def test_a_withdrawn_story_leaves_the_log_and_a_moved_one_is_followed(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    newsroom_content(content)
    write_withdrawal(content, "10001")
    moved = make_story(2, slug="moved-on", corrections=[
        {"at": "2026-11-17T02:00:00Z", "text": "Correction 1 of story 2."}])
    (content / "stories/2026-11-14/story-number-2.json").unlink()
    write_story(content, moved)
    assert build(content, out, "--no-cache").exit_code == 0
    entries = listed(out, "corrections")
    assert [(e["story"], e["url"].removeprefix(BASE)) for e in entries] == [
        ("10002", "/stories/2026-11-14/moved-on/"),
        ("10003", "/stories/2026-11-14/story-number-3/")]


def test_a_beat_slug_that_leaves_its_folder_is_one_finding(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1, beat="models"))
    assert build(content, out).exit_code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    write_story(content, make_story(1, beat="../../etc"))
    result = build(content, out)
    assert result.exit_code == 1
    found = [line for line in result.output.splitlines() if "story-number-1.json" in line]
    assert len(found) == 1 and "/beat: '../../etc' is not a valid path segment" in found[0]
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_beat_titles_from_the_settings(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1, beat="ml-ops"))
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example.org"\n[beats]\n'
                        'ml-ops = "MLOps & serving"\n', encoding="utf-8")
    result = CliRunner().invoke(main, ["build", "--config", str(settings), "--content",
                                       str(content), "--out", str(out), "--now", NOW,
                                       "--no-search"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "n/artificial-intelligence/beats/ml-ops/index.json").read_bytes())
    assert data["title"] == "MLOps & serving"
    story = (out / "stories/2026-11-14/story-number-1/index.html").read_text()
    assert ">MLOps &amp; serving</a>" in story


BAD_PAGES = {
    "stories.md": ("---\ntitle: Stories\n---\nHello\n",
                   "stories.md:1:1: /stories/ is where desk puts its own pages"),
    "nav.md": ("---\ntitle: N\nnav: --5\n---\nHello\n", "nav.md:3:1: nav: a whole number"),
    "schema.md": ("---\ntitle: Schema\n---\nHello\n",
                  "schema.md:1:1: /schema/ is where desk puts its own pages"),
    "list.md": ("---\n- one\n- two\n---\nHello\n",
                "list.md:2:1: the front matter must be a mapping"),
    "bare.md": ("Hello, no front matter\n", "bare.md:1:1: a page starts with a front matter"),
    "kind.md": ("---\ntitle: K\npolicy: secretPolicy\n---\nHello\n",
                "kind.md:3:1: unknown policy kind 'secretPolicy'"),
    "About.md": ("---\ntitle: A\n---\nHello\n", "About.md:1:1: 'About' is not a valid path"),
    "twice.md": ("---\ntitle: A\ntitle: B\n---\n", "twice.md:3:1: 'title' is given twice"),
}


@pytest.mark.parametrize("name", sorted(BAD_PAGES))
def test_a_bad_page_is_one_finding_and_changes_nothing(tmp_path: Path, name: str) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1))
    write_pages(content)
    assert build(content, out).exit_code == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    text, expected = BAD_PAGES[name]
    (content / "pages" / name).write_text(text, encoding="utf-8")
    result = build(content, out)
    assert result.exit_code == 1
    found = [line for line in result.output.splitlines() if "/pages/" in line]
    assert len(found) == 1 and expected in found[0], result.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_page_with_raw_html_and_unsafe_links_is_inert(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1))
    (content / "pages").mkdir()
    (content / "pages" / "x.md").write_text(
        "---\ntitle: X <b>bold</b>\n---\n<script>alert(1)</script>\n\n"
        "[click](javascript:alert(1)) <img src=x onerror=alert(1)>\n", encoding="utf-8")
    assert build(content, out).exit_code == 0
    html = lxml.html.fromstring((out / "x/index.html").read_bytes())
    assert not html.xpath("//main//script | //main//img | //main//b")
    assert not [a for a in html.xpath("//a/@href") if "javascript" in a]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in (out / "x/index.html").read_text()
    assert html.findtext(".//h1") == "X <b>bold</b>"


def test_init_writes_the_starter_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert CliRunner().invoke(main, ["init", str(site), "--base-url",
                                     "https://news.example.org"]).exit_code == 0
    assert (site / "content/pages/about.md").is_file()
    assert "policy: correctionsPolicy" in (
        site / "content/pages/policies/corrections.md").read_text()
    result = CliRunner().invoke(main, ["build", "--config", str(site / "desk.toml"),
                                       "--no-search", "--now", NOW])
    assert result.exit_code == 0, result.output
    publisher = json.loads((site / "public/.well-known/publisher.json").read_bytes())
    assert publisher["correctionsPolicy"] == "https://news.example.org/policies/corrections/"


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", ["/about/", "/policies/corrections/", "/corrections/",
                                  "/agents/desk-writer/", "/agents/",
                                  "/n/artificial-intelligence/beats/models/"])
def test_no_axe_results_on_the_new_pages(browser, base_url: str, path: str,  # noqa: F811
                                         scheme: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    page = browser.new_page(color_scheme=scheme)
    page.goto(base_url + path)
    results = Axe().run(page)
    page.close()
    failing = [v for v in results.response["violations"] if v["impact"] in FAILING_IMPACTS]
    assert failing == [], "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in failing)
