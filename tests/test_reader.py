"""Reader experience: accessibility (axe-core, light and dark), search, metadata, weight."""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import lxml.html
import pytest
from click.testing import CliRunner
from picturegen import pictured_story
from storygen import REPO, make_corpus, seed, write_story
from test_browser import CHROMIUM, CHROMIUM_ARGS, require_chromium

from desk.cli import main

STORY = "/stories/2026-11-14/inference-throughput-race-kimi-deepseek/"
PICTURED = "/stories/2026-11-14/story-number-50/"  # two local pictures and a remote one
NOW = "2026-11-15T00:00:00Z"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed story among a small corpus with a pictured story, built with its search
    index."""
    root = tmp_path_factory.mktemp("reader")
    content = root / "content"
    make_corpus(content, 12)
    # Reviewed, so that the disclosure line's other form is checked too.
    write_story(content, pictured_story(50, content,
                                        published_at=datetime(2026, 11, 14, 9, tzinfo=UTC),
                                        review={"by": "Ada Editor", "at": "2026-11-14T10:00:00Z",
                                                "url": "https://hangingcontext.com/about/"}))
    data = seed()
    data["corrections"] = [{"at": "2026-11-14T18:00:00Z", "text": "An earlier version misstated a figure."}]
    write_story(content, data)
    out = root / "public"
    result = CliRunner().invoke(main, ["build", "--config", str(REPO / "pyproject.toml"),
                                       "--content", str(content), "--out", str(out),
                                       "--now", NOW, "--no-cache"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def base_url(site: Path) -> Iterator[str]:
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# Every axe rule but the experimental ones (WCAG 2.x A and AA, and best practices such as
# heading order and landmarks); a result of these impacts fails the page.
FAILING_IMPACTS = ("critical", "serious", "moderate")


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", [STORY, PICTURED, "/", "/n/artificial-intelligence/",
                                  "/editions/2026-11-14T12/", "/search/"])
def test_no_moderate_serious_or_critical_axe_results(browser, base_url: str, path: str,
                                                     scheme: str) -> None:
    from axe_playwright_python.sync_playwright import Axe

    page = browser.new_page(color_scheme=scheme)
    page.goto(base_url + path)
    if path == "/search/":
        page.goto(base_url + path + "?q=fortyfold")  # with results on screen
        page.wait_for_selector(".search-result")
    results = Axe().run(page)
    page.close()
    failing = [v for v in results.response["violations"] if v["impact"] in FAILING_IMPACTS]
    assert failing == [], "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in failing)


@pytest.mark.browser
def test_search_finds_the_seed_story(browser, base_url: str) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(base_url + "/")
    page.fill("#site-search", "fortyfold")
    page.press("#site-search", "Enter")
    result = page.locator(".search-result h2 a").first
    expect(result).to_contain_text("Throughput is the new model spec", timeout=15_000)
    assert result.get_attribute("href").rstrip("/").endswith(STORY.rstrip("/"))
    page.close()


@pytest.mark.browser
def test_citation_reveals_its_source_on_keyboard_focus(browser, base_url: str) -> None:
    page = browser.new_page()
    page.goto(base_url + STORY)
    tip = page.locator("#fact-1 .cite-tip").first  # the script's, from the sources list
    assert tip.bounding_box()["width"] <= 1
    page.focus("#fact-1 a.cite")
    assert tip.bounding_box()["width"] > 50
    assert "Kimi K3.1 Pro" in tip.inner_text()
    assert page.locator("#fact-1 a.cite").first.get_attribute("aria-label") == "source 1"
    page.close()


def head_of(site: Path) -> lxml.html.HtmlElement:
    return lxml.html.fromstring((site / STORY.strip("/") / "index.html").read_bytes())


def test_json_ld_news_article(site: Path) -> None:
    document = head_of(site)
    scripts = document.xpath('//script[@type="application/ld+json"]')
    assert len(scripts) == 1
    data = json.loads(scripts[0].text)
    url = "https://hangingcontext.com" + STORY
    assert data["@context"] == "https://schema.org" and data["@type"] == "NewsArticle"
    assert data["headline"].startswith("Throughput is the new model spec")
    assert data["description"].startswith("One host served 20.23 million")
    assert data["datePublished"] == "2026-11-14T12:36:05Z"
    assert data["dateModified"] == "2026-11-14T18:00:00Z"
    # The publisher is the author; the agent that wrote it, a contributor.
    assert data["author"] == [{"@type": "NewsMediaOrganization", "name": "Hanging Context",
                               "url": "https://hangingcontext.com/"}]
    assert data["contributor"] == [{
        "@type": "Organization", "additionalType": "https://schema.org/SoftwareApplication",
        "name": "muse", "url": "https://hangingcontext.com/agents/muse/"}]
    assert data["digitalSourceType"] == "https://schema.org/TrainedAlgorithmicMediaDigitalSource"
    assert data["publisher"]["@type"] == "NewsMediaOrganization"
    assert data["mainEntityOfPage"] == {"@type": "WebPage", "@id": url}
    assert data["articleSection"] == "Artificial Intelligence"
    assert data["isPartOf"]["issueNumber"] == "2026-11-14T12"
    assert [c["identifier"] for c in data["citation"]] == [
        "1794620357587490784", "1794580700675227528", "1794602922667391810"]
    assert data["isBasedOn"][0] == "https://blackbox.ai/blog/kimi-k3-1-pro-fireworks-capacity"
    assert data["license"] == "https://hangingcontext.com/terms/reuse/"
    assert data["correction"] == [{"@type": "CorrectionComment",
                                   "text": "An earlier version misstated a figure.",
                                   "datePublished": "2026-11-14T18:00:00Z"}]
    assert "image" not in data  # no picture: no image, and never the site's logo


def test_open_graph_and_twitter(site: Path) -> None:
    document = head_of(site)
    og = {m.get("property"): m.get("content") for m in document.xpath("//meta[@property]")}
    tw = {m.get("name"): m.get("content") for m in document.xpath('//meta[starts-with(@name, "twitter:")]')}
    assert og["og:type"] == "article"
    assert og["og:url"] == "https://hangingcontext.com" + STORY
    assert og["og:title"].startswith("Throughput is the new model spec")
    assert og["og:image"] == "https://hangingcontext.com/static/og-default.png"
    assert og["og:image:alt"] and og["og:site_name"] == "Hanging Context"
    assert og["article:published_time"] == "2026-11-14T12:36:05Z"
    assert og["article:modified_time"] == "2026-11-14T18:00:00Z"
    assert og["article:section"] == "Artificial Intelligence"
    assert tw["twitter:card"] == "summary_large_image"
    assert (site / "static/og-default.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert document.xpath('//link[@rel="license"]/@href') == ["/terms/reuse/", "/license.xml"]


def test_story_page_is_light(site: Path) -> None:
    html = (site / STORY.strip("/") / "index.html").read_bytes()
    assert len(html) < 60_000
    document = lxml.html.fromstring(html)
    assert len(document.xpath('//link[@rel="stylesheet"]')) == 1
    assert len(document.xpath("//script[@src]")) <= 1
    css = document.xpath('//link[@rel="stylesheet"]/@href')[0]
    assert re.fullmatch(r"/static/site\.[0-9a-f]{10}\.css", css)


def test_story_blocks_are_present_and_labelled(site: Path) -> None:
    document = head_of(site)
    assert document.xpath('//aside[@aria-label="Advertisement"]//p[@class="ad-label"]')[0].text.startswith("Advertisement")
    assert document.xpath('//section[@class="corrections"]')
    assert document.xpath('//aside[@class="decision-card"]')
    assert document.xpath('//article[@data-pagefind-body]')


def test_every_page_links_the_favicon(site: Path) -> None:
    for page in site.rglob("*.html"):
        if "pagefind" in page.parts:
            continue
        links = lxml.html.fromstring(page.read_bytes()).xpath('//link[@rel="icon"]')
        assert [(link.get("href"), link.get("type")) for link in links] == [
            ("/static/favicon.svg", "image/svg+xml")], page
    icon = (site / "static/favicon.svg").read_bytes()
    assert icon.startswith(b"<svg") and len(icon) < 1000


def test_citations_and_byline_read_well_without_css(site: Path) -> None:
    document = head_of(site)
    markers = document.cssselect("a.cite")
    assert len(markers) > 10
    for marker in markers:
        number = re.fullmatch(r"\[(\d+)\]", marker.text_content())
        assert number, marker.text_content()  # the marker's whole text
        assert marker.get("aria-label") == f"source {number.group(1)}"
        assert marker.get("href") == f"#src-{number.group(1)}"
    body = document.find("body").text_content()
    title = "Kimi K3.1 Pro: more throughput from the same GPUs"
    assert body.count(title) == 1  # in the sources list, once
    byline = " ".join(document.cssselect(".byline")[0].text_content().split())
    assert byline == ("Confirmed · 3 Manifests · Artificial Intelligence · Infrastructure · "
                      "14 November 2026, 12:36 UTC · Edition 2026-11-14T12")
    made = " ".join(document.cssselect(".made-by")[0].text_content().split())
    assert made == "Written by agent muse from 3 sources · Published without human review"
    front = lxml.html.fromstring((site / "index.html").read_bytes())
    meta = " ".join(front.cssselect(".card .meta")[0].text_content().split())
    assert meta.endswith(" · 14 November 2026, 12:36 UTC") and "  " not in meta, meta
    assert meta.startswith("Agent-written · "), meta


def test_story_html_is_not_much_larger_than_its_json(site: Path) -> None:
    folder = site / STORY.strip("/")
    html, data = (folder / "index.html").stat().st_size, (folder / "index.json").stat().st_size
    # 1.42: the byline naming the writing agent, the beat link and the corrections log in
    # the footer (what readers and extractors need to know who wrote it) took 2% more.
    # 1.72: the key facts again, as schema.org Claims in the JSON-LD with the manifest and
    # claim ids of each source they cite (5.8 KB of the seed's 33 KB).
    assert html < 1.72 * data, (html, data)
