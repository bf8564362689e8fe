"""An agent-written desk that says so: the disclosure at first exposure, an accountable
editor, previews search engines may show large, and the key facts as claims, for people
and for machines (read back by real parsers: lxml, pyld, extruct, feedparser)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import extruct
import feedparser
import lxml.html
import pytest
from click.testing import CliRunner
from picturegen import photo, pictured_story
from pyld import jsonld
from storygen import REPO, SEED_PATH, make_story, seed, write_draft, write_story, write_withdrawal
from test_publish import nu_errors

from desk.cli import main
from desk.config import ConfigError, load_config

NOW = "2026-11-15T00:00:00Z"
BASE = "https://hangingcontext.com"
SCHEMA = "https://schema.org/"
SEED = "stories/2026-11-14/inference-throughput-race-kimi-deepseek/"
SEED_URL = f"{BASE}/{SEED}"
SEED_LINE = "Written by agent muse from 3 sources · Published without human review"
EDITOR = "Ada Editor"
EDITOR_URL = f"{BASE}/about/#editors"
REVIEWED_LINE = f"Written by agent muse from 3 sources · Reviewed by {EDITOR}, 14 November 2026"
INDEXABLE = "max-image-preview:large"


def build(config: Path, content: Path, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["build", "--config", str(config), "--content",
                                     str(content), "--out", str(out), "--now", NOW,
                                     "--no-search", "--no-cache", *extra])


def check(config: Path, content: Path) -> Any:
    return CliRunner().invoke(main, ["check", "--config", str(config), "--content",
                                     str(content)])


def settings(folder: Path, extra: str = "") -> Path:
    """A desk.toml for the site, with the AI newsroom's editor in charge."""
    path = folder / "desk.toml"
    path.write_text(f'base_url = "{BASE}"\ntitle = "Hanging Context"\n{extra}\n'
                    "[editors.artificial-intelligence]\n"
                    f'name = "{EDITOR}"\nurl = "{EDITOR_URL}"\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def seed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped content (the seed story, as it is), with the repository's settings."""
    out = tmp_path_factory.mktemp("trust-seed") / "public"
    result = build(REPO / "pyproject.toml", REPO / "content", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def reviewed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed story reviewed by the newsroom's editor in charge (the review naming no
    URL of its own), beside an unreviewed story; the editor named in the settings."""
    root = tmp_path_factory.mktemp("trust-reviewed")
    content = root / "content"
    data = seed()
    data["review"] = {"by": EDITOR, "at": "2026-11-14T13:05:00Z"}
    write_story(content, data, SEED_PATH.name)
    write_story(content, make_story(1, writer={"agent": "muse", "run_id": "r1"}))
    result = build(settings(root), content, root / "public")
    assert result.exit_code == 0, result.output
    return root / "public"


def page(site: Path, path: str = SEED) -> lxml.html.HtmlElement:
    return lxml.html.fromstring((site / path / "index.html").read_bytes())


def text_of(element: lxml.html.HtmlElement) -> str:
    return " ".join(element.text_content().split())


def article_of(site: Path, path: str = SEED) -> dict[str, Any]:
    """The story page's NewsArticle as extruct reads it."""
    html = (site / path / "index.html").read_text(encoding="utf-8")
    (article,) = extruct.extract(html, base_url=BASE, syntaxes=["json-ld"])["json-ld"]
    assert article["@type"] == "NewsArticle"
    return article


# URL-valued terms, as schema.org's own context declares them.
_IDS = ("url", "digitalSourceType", "sameAs", "additionalType")


def offline_loader(url: str, options: dict[str, Any]) -> dict[str, Any]:
    """schema.org's context, offline: every term in its vocabulary."""
    assert url.rstrip("/") in ("https://schema.org", "http://schema.org"), url
    context = {"@vocab": SCHEMA, **{k: {"@id": SCHEMA + k, "@type": "@id"} for k in _IDS}}
    return {"contentType": "application/ld+json", "contextUrl": None, "documentUrl": url,
            "document": {"@context": context}}


def graph_of(site: Path, path: str = SEED) -> dict[str, dict[str, Any]]:
    """The JSON-LD of a story page flattened by pyld: every node by its @id."""
    html = (site / path / "index.html").read_text(encoding="utf-8")
    (script,) = re.findall(r'<script type="application/ld\+json">(.*?)</script>', html, re.S)
    flat = jsonld.flatten(json.loads(script), None, {"documentLoader": offline_loader})
    return {node["@id"]: node for node in flat}


def the_article(graph: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (found,) = [n for n in graph.values() if SCHEMA + "NewsArticle" in n.get("@type", [])]
    return found


def values(node: dict[str, Any], term: str) -> list[Any]:
    return [v.get("@value", v.get("@id")) for v in node.get(SCHEMA + term, [])]


def test_the_seed_story_says_who_wrote_it_above_its_standfirst(seed_site: Path) -> None:
    header = page(seed_site).find_class("story-header")[0]
    order = [e.get("class") or e.tag for e in header]
    assert order.index("made-by") == order.index("h1") + 1
    assert order.index("dek") == order.index("made-by") + 1
    line = header.find_class("made-by")[0]
    assert text_of(line) == SEED_LINE
    assert [a.get("href") for a in line.iter("a")] == ["/agents/muse/", "#sources-title"]
    assert page(seed_site).get_element_by_id("sources-title") is not None
    # No byline gives the agent as the author any more.
    assert page(seed_site).xpath('//meta[@name="author"]/@content') == ["Hanging Context"]


def test_the_seed_story_json_ld_names_the_agent_as_contributor(seed_site: Path) -> None:
    article = article_of(seed_site)
    assert article["digitalSourceType"] == SCHEMA + "TrainedAlgorithmicMediaDigitalSource"
    assert article["contributor"] == [{
        "@type": "Organization", "additionalType": SCHEMA + "SoftwareApplication",
        "name": "muse", "url": f"{BASE}/agents/muse/"}]
    assert article["author"] == [{"@type": "NewsMediaOrganization", "name": "Hanging Context",
                                  "url": f"{BASE}/"}]
    # No picture, so no image at all: not the site's logo (the publisher keeps it).
    assert "image" not in article
    assert "og-default" in article["publisher"]["logo"]["url"]
    assert "editor" not in article and "reviewedBy" not in article["mainEntityOfPage"]
    # The same, expanded by pyld as a consumer would.
    node = the_article(graph_of(seed_site))
    assert values(node, "digitalSourceType") == [SCHEMA + "TrainedAlgorithmicMediaDigitalSource"]
    (agent,) = [graph_of(seed_site)[c] for c in values(node, "contributor")]
    assert values(agent, "name") == ["muse"]
    assert values(node, "image") == []


def test_the_seed_story_s_disclosure_in_every_format(seed_site: Path) -> None:
    data = json.loads((seed_site / SEED / "index.json").read_bytes())
    assert data["authorship"] == {
        "statement": SEED_LINE,
        "digital_source_type": SCHEMA + "TrainedAlgorithmicMediaDigitalSource",
        "written_by": {"agent": "muse", "url": f"{BASE}/agents/muse/"},
        "sources": 3, "human_review": None, "editor_in_charge": None}
    markdown = (seed_site / SEED / "index.md").read_text(encoding="utf-8")
    head, body = markdown.split("\n---\n", 1)
    assert f'disclosure: "{SEED_LINE}"' in head
    # Under the headline, before the standfirst.
    assert body.index(f"\n{SEED_LINE}\n") < body.index(seed()["dek"][:40])
    assert body.index("\n# Throughput") < body.index(f"\n{SEED_LINE}\n")
    assert f"\n{SEED_LINE}\n" in (seed_site / "llms-full.txt").read_text(encoding="utf-8")
    for feed in ("feed.xml", "atom.xml"):
        parsed = feedparser.parse((seed_site / feed).read_bytes())
        assert not parsed.bozo, parsed.bozo_exception
        (entry,) = parsed.entries
        assert f"<p>{SEED_LINE}</p>" in entry.content[0].value, feed
    (item,) = json.loads((seed_site / "feed.json").read_bytes())["items"]
    assert f"<p>{SEED_LINE}</p>" in item["content_html"]
    assert item["_desk"]["disclosure"] == data["authorship"]


def test_every_card_listing_a_story_marks_it_agent_written(seed_site: Path,
                                                           reviewed_site: Path) -> None:
    for path in ("", "n/artificial-intelligence/", "editions/2026-11-14T12/", "agents/muse/"):
        cards = page(seed_site, path).find_class("card")
        assert cards, path
        assert [text_of(c.find_class("made")[0]) for c in cards] == ["Agent-written"], path
    marks = {text_of(c.find_class("card-title")[0]): text_of(c.find_class("made")[0])
             for c in page(reviewed_site, "").find_class("card")}
    assert marks == {seed()["headline"]: "Agent-written, human-reviewed",
                     "Headline of story 1": "Agent-written"}


def test_a_reviewed_story_names_its_editor(reviewed_site: Path) -> None:
    line = page(reviewed_site).find_class("made-by")[0]
    assert text_of(line) == REVIEWED_LINE
    # The review names no URL: the editor in charge's own page, from the settings.
    assert line.xpath(".//a/@href")[-1] == EDITOR_URL
    assert line.xpath(".//time/@datetime") == ["2026-11-14T13:05:00Z"]
    footer = page(reviewed_site).find_class("editor-in-charge")[0]
    assert text_of(footer) == f"Editor in charge of Artificial Intelligence: {EDITOR}"
    article = article_of(reviewed_site)
    editor = {"@type": "Person", "name": EDITOR, "url": EDITOR_URL}
    assert article["editor"] == [editor] and article["accountablePerson"] == [editor]
    assert article["mainEntityOfPage"]["reviewedBy"] == editor
    assert article["mainEntityOfPage"]["lastReviewed"] == "2026-11-14"
    assert article["author"][0]["@type"] == "NewsMediaOrganization"
    # pyld: the page (the article's main entity) was reviewed by a person.
    graph = graph_of(reviewed_site)
    (webpage,) = [graph[i] for i in values(the_article(graph), "mainEntityOfPage")]
    (reviewer,) = [graph[i] for i in values(webpage, "reviewedBy")]
    assert values(reviewer, "name") == [EDITOR]
    data = json.loads((reviewed_site / SEED / "index.json").read_bytes())["authorship"]
    assert data["statement"] == REVIEWED_LINE
    assert data["human_review"] == {"name": EDITOR, "url": EDITOR_URL,
                                    "at": "2026-11-14T13:05:00Z"}
    assert data["editor_in_charge"] == {"name": EDITOR, "url": EDITOR_URL}
    assert f"\n{REVIEWED_LINE}\n" in (reviewed_site / SEED / "index.md").read_text()
    assert f"\n{REVIEWED_LINE}\n" in (reviewed_site / "llms-full.txt").read_text()


def test_an_unreviewed_story_names_its_newsroom_s_editor_as_accountable(
        reviewed_site: Path) -> None:
    path = "stories/2026-11-14/story-number-1/"
    assert text_of(page(reviewed_site, path).find_class("made-by")[0]) == (
        "Written by agent muse from 2 sources · Published without human review")
    article = article_of(reviewed_site, path)
    assert article["accountablePerson"] == [{"@type": "Person", "name": EDITOR,
                                             "url": EDITOR_URL}]
    assert "editor" not in article and "reviewedBy" not in article["mainEntityOfPage"]


def test_a_site_of_reviewed_stories_refuses_an_unreviewed_one(tmp_path: Path) -> None:
    content = tmp_path / "content"
    config = settings(tmp_path, "publish_unreviewed = false")
    reviewed = make_story(1, review={"by": EDITOR, "at": "2026-11-14T13:00:00Z"})
    write_story(content, reviewed)
    unreviewed = write_story(content, make_story(2))
    result = check(config, content)
    assert result.exit_code == 1
    assert (f"{unreviewed}: /review: [review-missing] no person reviewed this story"
            in result.output)
    assert "story-number-1" not in result.output
    out = tmp_path / "public"
    assert build(config, content, out).exit_code == 1
    assert not out.exists()
    held = build(config, content, out, "--hold-back")
    assert held.exit_code == 3, held.output
    assert (out / "stories/2026-11-14/story-number-1/index.html").is_file()
    assert not (out / "stories/2026-11-14/story-number-2").exists()
    # Where unreviewed stories may be published (the default), the same content passes.
    (tmp_path / "open").mkdir()
    assert check(settings(tmp_path / "open"), content).exit_code == 0


def test_editors_settings_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "desk.toml"
    path.write_text(f'base_url = "{BASE}"\n[editors.Bad_Room]\nname = "X"\n'
                    '[editors.climate]\nname = "Y"\nurl = "javascript:alert(1)"\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert "editors.Bad_Room" in str(raised.value) or "editors" in str(raised.value)
    assert "absolute http(s) URL" in str(raised.value)
    path.write_text(f'base_url = "{BASE}"\n')
    assert load_config(path).publish_unreviewed is True


def robots_of(html: Path) -> list[str]:
    return lxml.html.fromstring(html.read_bytes()).xpath('//meta[@name="robots"]/@content')


def test_indexable_pages_allow_large_previews_and_noindex_pages_do_not(
        tmp_path: Path, seed_site: Path) -> None:
    content = tmp_path / "content"
    for n in (1, 2):
        write_story(content, make_story(n), f"{n}.json")
    config = REPO / "pyproject.toml"
    out = tmp_path / "public"
    assert build(config, content, out).exit_code == 0
    write_story(content, make_story(1, slug="moved"), "1.json")  # a redirect page
    write_withdrawal(content, "10002")  # a withdrawal notice
    write_draft(content, make_story(3))  # a draft, shown
    assert build(config, content, out, "--drafts").exit_code == 0
    seen = {"indexable": 0, "noindex": 0}
    for site in (out, seed_site):
        for html in site.rglob("*.html"):
            found = robots_of(html)
            if any("noindex" in r for r in found):
                seen["noindex"] += 1
                assert not any(INDEXABLE in r for r in found), html
            else:
                seen["indexable"] += 1
                assert found == [f"{INDEXABLE}, max-snippet:-1, max-video-preview:-1"], html
    assert seen["noindex"] >= 3 and seen["indexable"] > 20
    for noindex in ("stories/2026-11-14/story-number-1/index.html",  # now a redirect
                    "stories/2026-11-14/story-number-2/index.html",  # withdrawn
                    "stories/2026-11-14/story-number-3/index.html"):  # a draft
        assert not any(INDEXABLE in r for r in robots_of(out / noindex)), noindex
    preview = tmp_path / "preview"
    assert build(config, content, preview, "--preview").exit_code == 0
    for html in preview.rglob("*.html"):
        assert not any(INDEXABLE in r for r in robots_of(html)), html


def test_desk_check_warns_of_a_narrow_lead_picture(tmp_path: Path) -> None:
    content = tmp_path / "content"
    (content / "stories").mkdir(parents=True)
    narrow = write_story(content, pictured_story(1, content))
    photo(content / "media/2026-11-14/lead-1.jpg", (800, 600))  # the lead, narrower
    wide = write_story(content, pictured_story(2, content))
    result = check(REPO / "pyproject.toml", content)
    assert result.exit_code == 0, result.output
    assert (f"{narrow}: /images/0: [lead-image-narrow] the lead picture is 800 pixels wide"
            in result.output)
    assert str(wide) not in result.output


def claims_of(site: Path, path: str = SEED) -> dict[str, dict[str, Any]]:
    """The Claims of a story page's JSON-LD (as extruct reads it), by @id."""
    return {c["@id"]: c for c in article_of(site, path)["hasPart"] if c["@type"] == "Claim"}


def test_each_key_fact_has_its_fragment_and_its_claim(seed_site: Path) -> None:
    story = seed()
    html = page(seed_site)
    claims = claims_of(seed_site)
    manifests = {m["manifest_id"] for m in story["manifests"]}
    assert len(claims) == len(story["key_facts"])
    for n, fact in enumerate(story["key_facts"], start=1):
        item = html.get_element_by_id(f"fact-{n}")
        assert text_of(item).startswith(" ".join(fact["text"].split()))
        claim = claims[f"{SEED_URL}#fact-{n}"]
        assert claim["text"] == fact["text"]
        assert claim["appearance"] == {"@id": SEED_URL}
        cited = []
        for work in claim["citation"]:
            ids = {(i["propertyID"], i["value"]) for i in work["identifier"]}
            (manifest,) = [v for k, v in ids if k == "manifest_id"]
            assert manifest in manifests  # every source resolves to the story's manifests
            cited.append((manifest, sorted(v for k, v in ids if k == "claim_id")))
        assert cited == [(c["manifest_id"], sorted(c["claim_ids"])) for c in fact["cites"]]
    # pyld reads the same claims, appearing on the page the article is the main entity of.
    graph = graph_of(seed_site)
    parts = values(the_article(graph), "hasPart")
    assert sorted(parts) == sorted(claims)
    for claim_id in parts:
        assert graph[claim_id]["@type"] == [SCHEMA + "Claim"]
        assert values(graph[claim_id], "appearance") == [SEED_URL]
    assert "ClaimReview" not in (seed_site / SEED / "index.html").read_text()


def test_a_fact_keeps_its_fragment_while_it_is_unchanged(tmp_path: Path,
                                                         seed_site: Path) -> None:
    data = seed()
    data["key_facts"][-1]["text"] = "A last fact, reworded."
    content = tmp_path / "content"
    write_story(content, data, SEED_PATH.name)
    out = tmp_path / "public"
    assert build(REPO / "pyproject.toml", content, out).exit_code == 0
    before, after = claims_of(seed_site), claims_of(out)
    last = f"{SEED_URL}#fact-{len(data['key_facts'])}"
    assert after.pop(last)["text"] == "A last fact, reworded."
    before.pop(last)
    assert after == before


def test_the_disclosure_and_editor_pages_are_valid_html(reviewed_site: Path,
                                                        seed_site: Path) -> None:
    assert nu_errors(reviewed_site / SEED, seed_site / SEED) == []
