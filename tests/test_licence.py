"""The reuse terms in every form (desk.render.licence): the terms page, reuse.json, the RSL
licence file and robots.txt's licence lines, all made from [tool.desk.reuse]."""

from __future__ import annotations

import json
import shutil
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from lxml import etree
from storygen import REPO, make_corpus, seed, write_story

from desk.build.pipeline import build
from desk.config import Config, ConfigError, load_config
from desk.content.catalog import Clock
from desk.publish.linkcheck import check_links
from desk.render.licence import content_signal

NOW = datetime(2026, 11, 15, tzinfo=UTC)
RSL = "{https://rslstandard.org/rsl}"
DERIVED = ("terms/reuse/index.html", ".well-known/reuse.json", "license.xml", "robots.txt")


def repo_reuse() -> dict[str, Any]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    reuse: dict[str, Any] = data["tool"]["desk"]["reuse"]
    return reuse


def site_config(tmp_path: Path, reuse: dict[str, Any], **extra: Any) -> Config:
    """The repository's settings with another reuse table."""
    return load_config(REPO / "pyproject.toml", {
        "content_dir": tmp_path / "content", "output_dir": tmp_path / "public",
        "cache_dir": tmp_path / "cache", "reuse": reuse, **extra})


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Config:
    root = tmp_path_factory.mktemp("licence")
    make_corpus(root / "content", 6)
    write_story(root / "content", seed())
    config = site_config(root, repo_reuse())
    assert build(config, Clock(NOW)).ok
    return config


def licence_of(out: Path) -> etree._Element:
    """/license.xml, read by a real XML parser (which refuses a file not well formed)."""
    return etree.fromstring((out / "license.xml").read_bytes(),
                            etree.XMLParser(resolve_entities=False))


def test_licence_file_is_rsl_with_the_terms_uses(built: Config) -> None:
    root = licence_of(built.output_dir)
    assert root.tag == RSL + "rsl"
    scopes = {c.get("url"): c for c in root.findall(RSL + "content")}
    assert set(scopes) == {"/", "/media/"}
    site = scopes["/"]
    licence = site.find(RSL + "license")
    assert licence is not None
    permits = licence.find(RSL + "permits")
    assert permits is not None and permits.get("type") == "usage"
    assert permits.text is not None
    assert permits.text.split() == repo_reuse()["permits"]
    payment = licence.find(RSL + "payment")
    assert payment is not None and payment.get("type") == "attribution"
    assert site.findtext(RSL + "terms") == "https://hangingcontext.com/terms/reuse/"
    assert site.findtext(RSL + "copyright") == "Hanging Context"
    # The pictures: shown by search, no AI use; their terms are the page's Pictures line.
    pictures = scopes["/media/"].find(RSL + "license")
    assert pictures is not None
    assert pictures.findtext(RSL + "permits") == "search"
    assert pictures.findtext(RSL + "prohibits") == "ai-all"
    assert pictures.find(RSL + "payment") is None
    assert scopes["/media/"].findtext(RSL + "terms") == (
        "https://hangingcontext.com/terms/reuse/#pictures")


def test_robots_names_the_licence_and_its_content_signal(built: Config) -> None:
    lines = (built.output_dir / "robots.txt").read_text().splitlines()
    assert "License: https://hangingcontext.com/license.xml" in lines
    assert "Content-Signal: search=yes, ai-input=yes, ai-train=yes" in lines
    # In the group of every user agent, before its rules.
    assert lines.index("Content-Signal: search=yes, ai-input=yes, ai-train=yes") == 1


def test_every_page_links_the_licence_file(built: Config) -> None:
    pages = sorted(built.output_dir.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        html = lxml.html.fromstring(page.read_bytes())
        if html.cssselect('meta[http-equiv="refresh"]'):
            continue  # a redirect page
        links = html.cssselect('link[rel="license"][type="application/rsl+xml"]')
        assert [link.get("href") for link in links] == ["/license.xml"], page


def test_terms_page_says_pictures_are_not_covered(built: Config) -> None:
    html = lxml.html.fromstring((built.output_dir / "terms/reuse/index.html").read_bytes())
    terms = {dt.text_content(): dt.getnext().text_content() for dt in html.cssselect("dt")}
    assert terms["Pictures"].startswith("Pictures are not covered by these terms.")
    assert terms["Permitted uses"] == ("search engines' indexes and results; input to AI "
                                       "answers and agents (retrieval, grounding); training "
                                       "AI models")
    assert html.cssselect("dt#pictures") and html.cssselect("dt#credit")
    reuse = json.loads((built.output_dir / ".well-known/reuse.json").read_text())
    assert reuse["pictures"] == terms["Pictures"]
    assert reuse["rsl_url"] == "https://hangingcontext.com/license.xml"


def test_changing_the_reuse_table_changes_all_four(tmp_path: Path) -> None:
    """One table, four files: a build after the table changed (the same cache and site)
    says the new terms in each of them."""
    write_story(tmp_path / "content", seed())
    before = repo_reuse()
    assert build(site_config(tmp_path, before), Clock(NOW)).ok
    out = tmp_path / "public"
    old = {name: (out / name).read_bytes() for name in DERIVED}
    after = {**before, "attribution": "The Desk", "permits": ["search", "ai-input"],
             "prohibits": ["ai-train"]}
    report = build(site_config(tmp_path, after), Clock(NOW))
    assert report.ok
    new = {name: (out / name).read_bytes() for name in DERIVED}
    assert [name for name in DERIVED if new[name] == old[name]] == []
    reuse = json.loads(new[".well-known/reuse.json"])
    assert (reuse["attribution"], reuse["permits"], reuse["prohibits"]) == (
        "The Desk", ["search", "ai-input"], ["ai-train"])
    terms = lxml.html.fromstring(new["terms/reuse/index.html"])
    said = {dt.text_content(): dt.getnext().text_content() for dt in terms.cssselect("dt")}
    assert said["Credit"] == "The Desk" and said["Prohibited uses"] == "training AI models"
    licence = licence_of(out).find(RSL + "content")
    assert licence is not None
    assert licence.findtext(f"{RSL}license/{RSL}permits") == "search ai-input"
    assert licence.findtext(f"{RSL}license/{RSL}prohibits") == "ai-train"
    assert "Content-Signal: search=yes, ai-input=yes, ai-train=no\n" in new["robots.txt"].decode()


@pytest.mark.parametrize("permits,prohibits,signal", [
    (["all"], [], "search=yes, ai-input=yes, ai-train=yes"),
    (["ai-all"], ["search"], "search=no, ai-input=yes, ai-train=yes"),
    (["search"], ["ai-train"], "search=yes, ai-train=no"),
    (["ai-index"], [], ""),  # no use Content Signals name: no line
    ([], [], ""),
])
def test_content_signal_follows_the_uses(tmp_path: Path, permits: list[str],
                                         prohibits: list[str], signal: str) -> None:
    config = site_config(tmp_path, {"permits": permits, "prohibits": prohibits})
    assert content_signal(config) == signal


def test_a_site_without_uses_has_no_signal_line(tmp_path: Path) -> None:
    write_story(tmp_path / "content", seed())
    reuse = {k: v for k, v in repo_reuse().items() if k != "permits"}
    assert build(site_config(tmp_path, reuse), Clock(NOW)).ok
    robots = (tmp_path / "public/robots.txt").read_text()
    assert "Content-Signal" not in robots
    assert "License: https://hangingcontext.com/license.xml\n" in robots
    licence = licence_of(tmp_path / "public").find(f"{RSL}content/{RSL}license")
    assert licence is not None and licence.find(RSL + "permits") is None


@pytest.mark.parametrize("reuse,message", [
    ({"permits": ["search", "ai-everything"]},
     "permits: 'ai-everything' is not a use RSL names"),
    ({"permits": "search"}, "permits is a list of uses"),
    ({"permits": ["search"], "prohibits": ["search"]}, "search both permitted and prohibited"),
    ({"summary": ["a", "list"]}, "summary is a text"),
])
def test_bad_uses_are_refused(tmp_path: Path, reuse: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        site_config(tmp_path, reuse)


def test_link_check_reads_the_licence_files_terms(built: Config, tmp_path: Path) -> None:
    """Its <terms> are links; a <content url> is a path pattern (/media/ need not exist)."""
    assert check_links(built.output_dir, built) == []
    broken = tmp_path / "site"
    shutil.copytree(built.output_dir, broken)
    licence = broken / "license.xml"
    licence.write_text(licence.read_text().replace("/terms/reuse/</terms>", "/terms/gone/</terms>"))
    assert [(Path(f.path).name, f.message) for f in check_links(broken, built)] == [
        ("license.xml", "https://hangingcontext.com/terms/gone/: no such file in the output")]
