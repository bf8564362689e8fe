"""The edition builder on a generated corpus: listings, pagination, links, feeds, sitemaps,
scheduling and determinism."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from itertools import groupby, pairwise
from pathlib import Path
from typing import Any

import feedparser
import lxml.html
import pytest
from conftest import tree
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree
from storygen import REPO, make_corpus, make_story, seed, write_story

from desk import urls
from desk.build.pipeline import build
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.publish.linkcheck import check_links

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"


def make_config(content: Path, out: Path, **extra: Any) -> Config:
    return load_config(REPO / "pyproject.toml", {"content_dir": content, "output_dir": out,
                                                 **extra})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Config, list[dict[str, Any]]]:
    root = tmp_path_factory.mktemp("corpus")
    stories = make_corpus(root / "content", 45)
    config = make_config(root / "content", root / "public", page_size=4, feed_size=10)
    report = build(config, Clock(NOW))
    assert report.ok, report.findings
    return config, stories


def newest_first(stories: list[dict[str, Any]]) -> list[str]:
    return [s["id"] for s in sorted(stories, key=lambda s: (s["published_at"], s["id"]),
                                    reverse=True)]


def listing_ids(out: Path, first_page: str) -> list[str]:
    """Ids across all pages of a paginated listing, following `next`."""
    ids: list[str] = []
    data = json.loads((out / first_page / "index.json").read_text())
    while True:
        ids += [s["id"] for s in data["stories"]]
        if not data.get("next"):
            return ids
        next_path = data["next"].removeprefix("https://hangingcontext.com/")
        data = json.loads((out / next_path / "index.json").read_text())


def test_each_story_is_on_its_newsroom_and_edition_page_only(corpus) -> None:
    config, stories = corpus
    out = config.output_dir
    newsrooms = sorted({s["newsroom"] for s in stories})
    for newsroom in newsrooms:
        members = [s for s in stories if s["newsroom"] == newsroom]
        assert listing_ids(out, f"n/{newsroom}") == newest_first(members)
    editions = sorted({s["edition"] for s in stories})
    assert len(editions) > 5
    for edition in editions:
        data = json.loads((out / "editions" / edition / "index.json").read_text())
        members = [s for s in stories if s["edition"] == edition]
        # Grouped by newsroom, newest first within each group.
        expected = [i for n in newsrooms for i in newest_first(
            [s for s in members if s["newsroom"] == n])]
        assert [s["id"] for s in data["stories"]] == expected
    listed = json.loads((out / "editions/index.json").read_text())
    all_editions = listing_ids_of_editions(out)
    assert all_editions == sorted(editions, reverse=True)
    assert listed["editions"][0]["stories"] == sum(
        1 for s in stories if s["edition"] == editions[-1])


def listing_ids_of_editions(out: Path) -> list[str]:
    keys, path = [], "editions"
    while path:
        data = json.loads((out / path / "index.json").read_text())
        keys += [e["edition"] for e in data["editions"]]
        path = (data["next"] or "").removeprefix("https://hangingcontext.com/")
    return keys


def test_listing_entries_carry_metadata_and_hash(corpus) -> None:
    config, _ = corpus
    out = config.output_dir
    entry = json.loads((out / "index.json").read_text())["stories"][0]
    assert set(entry) == {"id", "headline", "dek", "url", "published_at", "newsroom",
                          "edition", "trust", "sha256"}
    import hashlib
    story_json = out / entry["url"].removeprefix("https://hangingcontext.com/") / "index.json"
    assert hashlib.sha256(story_json.read_bytes()).hexdigest() == entry["sha256"]


def test_front_page_shows_latest_edition_and_links_everywhere(corpus) -> None:
    config, stories = corpus
    out = config.output_dir
    latest = max(s["edition"] for s in stories)
    data = json.loads((out / "index.json").read_text())
    assert data["edition"] == latest
    assert {s["id"] for s in data["stories"]} == {s["id"] for s in stories
                                                  if s["edition"] == latest}
    page = lxml.html.fromstring((out / "index.html").read_bytes())
    hrefs = {a.get("href") for a in page.iter("a")}
    for newsroom in {s["newsroom"] for s in stories}:
        assert f"/n/{newsroom}/" in hrefs
    assert {"/editions/", "/feed.xml", "/atom.xml", "/feed.json"} <= hrefs


def test_front_page_also_shows_each_newsrooms_newest_and_recent_editions(corpus) -> None:
    config, stories = corpus
    out = config.output_dir
    data = json.loads((out / "index.json").read_text())
    latest = {s["id"] for s in data["stories"]}
    page = lxml.html.fromstring((out / "index.html").read_bytes())
    columns = page.cssselect(".front-newest .column")
    newsrooms = sorted({s["newsroom"] for s in stories})
    assert [n["newsroom"] for n in data["newsrooms"]] == newsrooms
    for entry, column in zip(data["newsrooms"], columns, strict=True):
        members = [s for s in stories if s["newsroom"] == entry["newsroom"]
                   and s["id"] not in latest]
        expected = newest_first(members)[:4]
        assert [s["id"] for s in entry["stories"]] == expected and len(expected) == 4
        assert column.cssselect("h3 a")[0].get("href") == f"/n/{entry['newsroom']}/"
        assert [a.get("href") for a in column.cssselect(".headlines a")] == [
            s["url"].removeprefix("https://hangingcontext.com") for s in entry["stories"]]
    editions = sorted({s["edition"] for s in stories}, reverse=True)
    assert [e["edition"] for e in data["editions"]] == editions[1:7]
    assert [a.get("href") for a in page.cssselect(".front-editions a")] == [
        f"/editions/{e}/" for e in editions[1:7]]
    # Headings step down one level at a time: h1, then h2 sections, then h3.
    levels = [int(h.tag[1]) for h in page.iter("h1", "h2", "h3", "h4")]
    assert levels[0] == 1 and all(b - a <= 1 for a, b in pairwise(levels))


@pytest.mark.parametrize("count,archived", [(4, 0), (7, 0), (8, 1), (11, 1), (12, 2)])
def test_pagination_boundaries(tmp_path: Path, count: int, archived: int) -> None:
    content = tmp_path / "content"
    for n in range(count):
        write_story(content, make_story(n))
    config = make_config(content, tmp_path / "public", page_size=4)
    assert build(config, Clock(NOW.replace(day=15))).ok
    out = config.output_dir / "n/artificial-intelligence"
    base = "https://hangingcontext.com/n/artificial-intelligence/"
    latest = json.loads((out / "index.json").read_text())
    # The latest page shows what no archive page holds: from 4 to 7 stories here.
    assert len(latest["stories"]) == count - 4 * archived
    assert (latest["page"], latest["archive_pages"], latest["prev"]) == (0, archived, None)
    assert latest["next"] == (f"{base}page/{archived}/" if archived else None)
    for page in range(1, archived + 1):
        data = json.loads((out / f"page/{page}/index.json").read_text())
        assert (data["page"], len(data["stories"])) == (page, 4)
        assert "archive_pages" not in data
        assert data["prev"] == (f"{base}page/{page + 1}/" if page < archived else base)
        assert data["next"] == (f"{base}page/{page - 1}/" if page > 1 else None)
    assert not (out / f"page/{archived + 1}").exists()
    assert not (out / "page/0").exists()
    first = lxml.html.fromstring((out / "index.html").read_bytes())
    nexts = [a.get("href") for a in first.iter("a") if a.get("rel") == "next"]
    path = "/n/artificial-intelligence/"
    assert nexts == ([f"{path}page/{archived}/"] if archived else [])
    if archived:
        newest_archive = lxml.html.fromstring((out / f"page/{archived}/index.html").read_bytes())
        prevs = [a.get("href") for a in newest_archive.iter("a") if a.get("rel") == "prev"]
        assert prevs == [path]


def test_an_archive_page_changes_only_when_a_page_is_added_after_it(tmp_path: Path) -> None:
    """New stories change the latest page; archive pages, counted from the oldest, keep
    their bytes (an hourly build renders them not again), except the newest one once,
    when a page is added after it and its "newer" link moves."""
    content = tmp_path / "content"
    config = make_config(content, tmp_path / "public", page_size=4)
    out = config.output_dir / "n/artificial-intelligence"
    seen: list[dict[str, bytes]] = []
    for count in range(8, 14):
        write_story(content, make_story(count - 1))
        if count == 8:
            for n in range(7):
                write_story(content, make_story(n))
        assert build(config, Clock(NOW.replace(day=15))).ok
        seen.append({p.relative_to(out).as_posix(): p.read_bytes()
                     for p in sorted(out.glob("page/*/index.*"))})
    page1 = [s["page/1/index.html"] for s in seen]  # 8, 9, 10, 11, 12, 13 stories
    assert page1[0] == page1[1] == page1[2] == page1[3] != page1[4] == page1[5]
    assert [len(s) for s in seen] == [2, 2, 2, 2, 4, 4]
    assert seen[4]["page/2/index.json"] == seen[5]["page/2/index.json"]
    assert seen[4]["page/1/index.json"] == seen[5]["page/1/index.json"]


def test_edition_pages_link_previous_and_next(corpus) -> None:
    config, stories = corpus
    editions = sorted({s["edition"] for s in stories})
    middle = editions[len(editions) // 2]
    i = editions.index(middle)
    page = lxml.html.fromstring((config.output_dir / "editions" / middle / "index.html").read_bytes())
    rel = {a.get("rel"): a.get("href") for a in page.iter("a") if a.get("rel")}
    assert rel == {"prev": f"/editions/{editions[i - 1]}/", "next": f"/editions/{editions[i + 1]}/"}


def test_every_internal_link_resolves(corpus) -> None:
    config, _ = corpus
    assert check_links(config.output_dir, config) == []


def test_link_checker_reports_a_broken_link(corpus, tmp_path: Path) -> None:
    config, _ = corpus
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<a href="/missing/">x</a><a href="#nowhere">y</a>')
    found = [f.message for f in check_links(site, config)]
    assert found == ["/missing/: no such file in the output", "#nowhere: no element with this id"]


@pytest.mark.parametrize("feed", ["feed.xml", "atom.xml", "n/climate/feed.xml", "n/climate/atom.xml"])
def test_xml_feeds_parse_cleanly_in_order(corpus, feed: str) -> None:
    config, stories = corpus
    parsed = feedparser.parse((config.output_dir / feed).read_bytes())
    assert not parsed.bozo, parsed.get("bozo_exception")
    members = [s for s in stories if feed.startswith("feed") or feed.startswith("atom")
               or s["newsroom"] == "climate"]
    expected = [f"https://hangingcontext.com/stories/{s['published_at'][:10]}/{s['slug']}/"
                for s in sorted(members, key=lambda s: (s["published_at"], s["id"]),
                                reverse=True)[:10]]
    assert [e.link for e in parsed.entries] == expected
    entry = parsed.entries[0]
    assert entry.content[0].value.count("<p>") >= 2
    assert 'href="/' not in entry.content[0].value  # absolute URLs only
    self_links = [link.href for link in parsed.feed.links if link.rel == "self"]
    assert self_links == [f"https://hangingcontext.com/{feed}"]


def test_json_feed_has_every_required_field(corpus) -> None:
    config, stories = corpus
    data = json.loads((config.output_dir / "feed.json").read_text())
    assert data["version"] == "https://jsonfeed.org/version/1.1"
    assert data["title"] and data["home_page_url"] and data["feed_url"]
    assert len(data["items"]) == 10
    for item in data["items"]:
        assert item["id"] == f"tag:hangingcontext.com,2026:stories/{item['_desk']['id']}"
        assert item["content_html"]
        datetime.fromisoformat(item["date_published"])
        assert item["_desk"]["trust"] == "confirmed"
        assert item["_desk"]["citations"][0]["manifest_id"]


def test_corrections_move_modified_dates(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(1, corrections=[
        {"at": "2026-11-14T18:00:00Z", "text": "Fixed a figure."},
        {"at": "2026-11-14T15:00:00Z", "text": "Earlier fix."}]))
    config = make_config(content, tmp_path / "public")
    assert build(config, Clock(NOW.replace(day=15))).ok
    out = config.output_dir
    atom = feedparser.parse((out / "atom.xml").read_bytes())
    assert atom.entries[0].updated == "2026-11-14T18:00:00Z"
    assert json.loads((out / "feed.json").read_text())["items"][0]["date_modified"] == "2026-11-14T18:00:00Z"
    html = (out / "stories/2026-11-14/story-number-1/index.html").read_text()
    assert html.index("Fixed a figure.") < html.index("Earlier fix.") < html.index("<h1>")


def test_sitemaps_parse_and_use_absolute_urls(corpus) -> None:
    config, stories = corpus
    out = config.output_dir
    sitemap = etree.parse(str(out / "sitemap.xml")).getroot()
    assert sitemap.tag == f"{{{SITEMAP_NS}}}urlset"
    locs = [e.text for e in sitemap.iter(f"{{{SITEMAP_NS}}}loc")]
    assert all(loc.startswith("https://hangingcontext.com/") for loc in locs)
    assert len(locs) == len(set(locs))
    for loc in locs:
        path = loc.removeprefix("https://hangingcontext.com/")
        assert (out / path / "index.html").is_file() or (out / path).is_file()
    assert len(locs) >= len(stories) + 3
    news = etree.parse(str(out / "news-sitemap.xml")).getroot()
    assert news.nsmap == {None: SITEMAP_NS, "news": NEWS_NS}
    window = [s for s in stories
              if NOW - timedelta(days=2) <= datetime.fromisoformat(s["published_at"]) <= NOW]
    urls = news.findall(f"{{{SITEMAP_NS}}}url")
    assert len(urls) == len(window) > 0
    first = urls[0].find(f"{{{NEWS_NS}}}news")
    assert first.findtext(f"{{{NEWS_NS}}}publication/{{{NEWS_NS}}}name") == "Hanging Context"
    assert first.findtext(f"{{{NEWS_NS}}}publication/{{{NEWS_NS}}}language") == "en"
    assert first.findtext(f"{{{NEWS_NS}}}title")
    datetime.fromisoformat(first.findtext(f"{{{NEWS_NS}}}publication_date"))


def test_news_sitemap_honours_the_two_day_window(tmp_path: Path) -> None:
    content = tmp_path / "content"
    now = datetime(2026, 11, 20, 12, tzinfo=UTC)
    for n, age in enumerate([timedelta(hours=1), timedelta(hours=47, minutes=59),
                             timedelta(hours=48, minutes=1), timedelta(days=5)]):
        write_story(content, make_story(n, published_at=now - age))
    config = make_config(content, tmp_path / "public")
    assert build(config, Clock(now)).ok
    news = etree.parse(str(config.output_dir / "news-sitemap.xml")).getroot()
    locs = [e.text for e in news.iter(f"{{{SITEMAP_NS}}}loc")]
    assert [loc.rsplit("/", 2)[-2] for loc in locs] == ["story-number-0", "story-number-1"]


def test_sitemap_switches_to_an_index_past_the_limit(corpus, tmp_path: Path) -> None:
    from desk.build.inspection import inspect_content
    from desk.build.pipeline import render_context
    from desk.content.catalog import build_catalog
    from desk.render.site import sitemap_pages

    config, _ = corpus
    config = config.model_copy(update={"output_dir": tmp_path / "public",
                                       "sitemap_max_urls": 20})
    assert build(config, Clock(NOW)).ok
    catalog = build_catalog(inspect_content(config).content, config, Clock(NOW))
    pages = sitemap_pages(render_context(catalog, config, Clock(NOW), None, ()))
    outputs = {"/" + f.name: f.read_bytes()
               for f in config.output_dir.glob("*sitemap*.xml")}
    index = etree.fromstring(outputs["/sitemap.xml"])
    assert index.tag == f"{{{SITEMAP_NS}}}sitemapindex"
    parts = [e.text.removeprefix("https://hangingcontext.com")
             for e in index.iter(f"{{{SITEMAP_NS}}}loc")]
    assert len(parts) >= 3 and set(outputs) == {"/sitemap.xml", "/news-sitemap.xml", *parts}
    listed = []
    for part in parts:
        # A month's stories or editions, or the other pages; cut in pieces past 20 URLs.
        assert re.fullmatch(r"/sitemap-((stories|editions)-\d{4}-\d{2}|pages)(-\d+)?\.xml",
                            part), part
        locs = [e.text for e in etree.fromstring(outputs[part]).iter(f"{{{SITEMAP_NS}}}loc")]
        assert 0 < len(locs) <= 20
        listed += locs
    assert sorted(listed) == sorted(f"https://hangingcontext.com{path}" for path, _ in pages)


def test_llms_files(corpus) -> None:
    config, stories = corpus
    out = config.output_dir
    llms = (out / "llms.txt").read_text()
    lines = llms.splitlines()
    assert lines[0] == "# Hanging Context"
    assert lines[2].startswith("> ")
    assert "## Climate" in lines and "## Optional" in lines
    md_links = [line for line in lines if line.startswith("- [") and "/index.md)" in line]
    assert md_links
    for line in md_links:
        url = line.split("](", 1)[1].split(")", 1)[0]
        assert (out / url.removeprefix("https://hangingcontext.com/")).is_file()
    full = (out / "llms-full.txt").read_text()
    latest = max(s["edition"] for s in stories)
    for story in stories:
        line = f'title: "{story["headline"]}"\n'
        assert (line in full) == (story["edition"] == latest)


def test_reuse_endpoints(tmp_path: Path) -> None:
    content = tmp_path / "content"
    data = seed()
    write_story(content, data)
    config = make_config(content, tmp_path / "public")
    report = build(config, Clock(NOW.replace(day=15)))
    assert report.ok
    assert not [f for f in report.warnings if f.code == "reuse-differs"]
    reuse = json.loads((config.output_dir / ".well-known/reuse.json").read_text())
    for key in ("summary", "attribution", "link_rule", "keep_ids_rule", "no_endorsement"):
        assert reuse[key] == data["reuse"][key]
    assert reuse["license_url"] == data["reuse"]["license_url"]
    assert reuse["machine_url"] == data["reuse"]["machine_url"]
    terms = (config.output_dir / "terms/reuse/index.html").read_text()
    assert "Hanging Context, with provenance by Synorb" in terms
    data["reuse"]["attribution"] = "Someone else"
    data["id"], data["slug"] = "other", "other-story"
    write_story(content, data)
    report = build(config, Clock(NOW.replace(day=15)))
    assert [f.pointer for f in report.warnings if f.code == "reuse-differs"] == ["/reuse"]


def test_robots_and_404(corpus) -> None:
    config, _ = corpus
    robots = (config.output_dir / "robots.txt").read_text()
    assert "Sitemap: https://hangingcontext.com/sitemap.xml" in robots
    assert "Sitemap: https://hangingcontext.com/news-sitemap.xml" in robots
    assert "Page not found" in (config.output_dir / "404.html").read_text()


def test_future_story_appears_only_with_future(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 6)
    future = make_story(99, published_at=NOW + timedelta(hours=3))
    future["headline"] = "A scheduled scoop"
    write_story(content, future)
    config = make_config(content, tmp_path / "public")
    report = build(config, Clock(NOW))
    assert report.ok
    assert [s.summary.id for s in report.held] == ["10099"]
    assert report.next_due == NOW + timedelta(hours=3)
    for name, data in tree(config.output_dir).items():
        assert b"story-number-99" not in data and b"scheduled scoop" not in data, name
        assert b"2026-11-11T03" not in data, name  # nor its edition
    report = build(config, Clock(NOW, True))
    assert report.ok and not report.held
    files = tree(config.output_dir)
    for name in ("stories/2026-11-11/story-number-99/index.html", "feed.xml", "atom.xml",
                 "feed.json", "sitemap.xml", "llms.txt", "n/artificial-intelligence/index.html",
                 "editions/2026-11-11T03/index.html", "index.html"):
        assert b"story-number-99" in files[name], name


def test_two_builds_are_byte_identical(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 20)
    write_story(content, seed())
    first = make_config(content, tmp_path / "one")
    second = make_config(content, tmp_path / "two")
    assert build(first, Clock(NOW)).ok and build(second, Clock(NOW)).ok
    assert tree(first.output_dir) == tree(second.output_dir)


@given(st.text(alphabet="/stories-editions0123456789T", max_size=40))
def test_a_sitemap_part_is_named_by_a_path_s_first_characters(path: str) -> None:
    # sitemap_parts asks for each beginning once (see urls.SITEMAP_PART_HEAD).
    assert urls.sitemap_part_of(path[:urls.SITEMAP_PART_HEAD]) == urls.sitemap_part_of(path)
    for real in ("/stories/2026-11-10/a/", "/editions/2026-11-10T06/", "/n/climate/"):
        assert (urls.sitemap_part_of((real + path)[:urls.SITEMAP_PART_HEAD])
                == urls.sitemap_part_of(real + path))


# Pages of a large site's sitemap: paths of the parts' kinds in any order, with instants
# (equal ones at other offsets too).
_SITEMAP_PAGES = st.lists(st.tuples(
    st.sampled_from(["/stories/2026-11-10/a-", "/stories/2026-10-31/b-",
                     "/editions/2026-11-10T06-", "/editions/2026-10-31T23-", "/n/climate/",
                     "/"]),
    st.integers(0, 3), st.integers(0, 2)), max_size=30).map(lambda drawn: [
        (f"{head}{i}/", datetime(2026, 11, 1, hour, tzinfo=timezone(timedelta(hours=shift))))
        for i, (head, hour, shift) in enumerate(drawn)])


@given(_SITEMAP_PAGES, st.integers(1, 5), st.data())
def test_a_sitemap_s_parts_are_its_pages_by_part_in_order(
        pages: list[tuple[str, datetime]], max_urls: int, data: st.DataObject) -> None:
    """Whether pages are given one by one, or runs of one part's pages are given as
    PartPages (made when asked, as a month's stories and editions are)."""
    from desk.render.sitemaps import PartPages, SitemapEntry, sitemap_parts

    by_part: dict[str, list[tuple[str, datetime]]] = {}
    for page in pages:
        by_part.setdefault(urls.sitemap_part_of(page[0]), []).append(page)
    expected = []
    for name, part in sorted(by_part.items()):
        pieces = [part[i: i + max_urls] for i in range(0, len(part), max_urls)]
        expected += ([(name, part)] if len(pieces) == 1 else
                     [(f"{name}-{n}", piece) for n, piece in enumerate(pieces, start=1)])
    entries: list[SitemapEntry] = []
    for _, group in groupby(pages, key=lambda page: urls.sitemap_part_of(page[0])):
        run = list(group)
        if data.draw(st.booleans()):
            entries.append(PartPages(run[0][0], len(run), max(lastmod for _, lastmod in run),
                                     partial(list, run)))
        else:
            entries += run
    found = sitemap_parts(entries, max_urls)
    assert [(name, part.pages()) for name, part in found] == expected
    for name, part in found:
        listed = part.pages()
        assert part.count == len(listed)
        assert name.startswith(urls.sitemap_part_of(part.head))
        # The very value max() gives: the first of equal instants, as the index shows it.
        assert part.newest() is max(lastmod for _, lastmod in listed)


_URL_PARTS = st.sampled_from(["https://", "HTTPS://", "http://", " ", "\t", "hangingcontext.com",
                              "example.org", ":443", "/", "/desk", "/stories/", "2026-11-10/",
                              "a", "?q=1", "#top", "\n", "%2F", "..", "@"])


@given(st.lists(_URL_PARTS, max_size=8).map("".join),
       st.sampled_from(["https://hangingcontext.com", "https://hangingcontext.com/",
                        "https://example.org/desk", "https://example.org/desk/",
                        "HTTPS://hangingcontext.com:443"]),
       st.one_of(st.none(), st.sampled_from(["https://example.org/stories/x/",
                                             "https://staging.example/stories/y/",
                                             "http://127.0.0.1:8000/stories/z/",
                                             "https://u@staging.example:8443/stories/v/",
                                             "HTTPS://staging.example/stories/w/",
                                             "https://staging.example?q/stories/w/"])))
def test_a_link_read_without_parsing_leads_where_parsing_says(url: str, base: str,
                                                              story_url: str | None) -> None:
    config = load_config(REPO / "pyproject.toml", {"base_url": base})
    assert (urls.internal_story_path(url, config, story_url)
            == urls.parsed_story_path(url, config, story_url))
    # Links on base_url's host, and on the story's own (a preview's base URL is its own).
    hosts = [base.rstrip("/"), *(["/".join(story_url.split("/")[:3])] if story_url else [])]
    links = [url]
    for host in hosts:
        for path in ("stories/2026-11-10/a/", "stories/2026-11-10/a/?x", "n/climate/", url):
            link = f"{host}/{path}"
            links.append(link)
            assert (urls.internal_story_path(link, config, story_url)
                    == urls.parsed_story_path(link, config, story_url))
    # A story's links read together, its own host read once, as they are read one by one.
    assert (urls.internal_story_paths(links, config, story_url)
            == [urls.parsed_story_path(link, config, story_url) for link in links])


_BASES = ["https://hangingcontext.com", "https://example.org/desk/", "https://stories",
          "https://example.org/a/stories", "HTTPS://hangingcontext.com:443", "https://stories/x"]
_STORY_URLS = ["https://example.org/stories/x/", "https://stories/stories/x/"]


@given(st.lists(_URL_PARTS, max_size=8).map("".join), st.sampled_from(_BASES),
       st.one_of(st.none(), st.sampled_from(_STORY_URLS)))
def test_a_link_read_as_written_never_misses_where_it_leads(url: str, base: str,
                                                            story_url: str | None) -> None:
    # What lets a build carry a story's key while the stories its links lead to are
    # unchanged (desk.build.pipeline._settled).
    config = load_config(REPO / "pyproject.toml", {"base_url": base})
    for link in (url, f"{base.rstrip('/')}/stories/{url}", f"{base.rstrip('/')}{url}"):
        path = urls.internal_story_path(link, config, story_url)
        if path is not None and "/stories/" not in config.base_path + "/":
            assert urls.may_lead_to(link, {path})
            written = urls.written_story_path(link)
            assert written == path or written is None and any(c in link for c in "\t\r\n")


_STORY_PATHS = st.sampled_from(["/stories/2026-11-10/a/", "/stories/2026-11-10/b-2/",
                                "/stories/2025-01-01/stories/"])


@given(st.lists(st.one_of(_URL_PARTS, _STORY_PATHS), max_size=8).map("".join),
       st.sampled_from(_BASES), st.frozensets(_STORY_PATHS), st.frozensets(_STORY_PATHS))
def test_a_link_cut_where_a_story_path_begins_is_read_as_written(
        url: str, base: str, stories: frozenset[str], paths: frozenset[str]) -> None:
    # The build reads every story's links with story_links_reader: it must give what
    # written_story_path gives, for links to the stories it knows and any other.
    config = load_config(REPO / "pyproject.toml", {"base_url": base})
    read = urls.story_links_reader(config, stories)
    written = urls.written_story_links(config, stories)
    if "/stories/" in config.base_path + "/":  # a link's written path is not its own
        assert read is None and not written
        return
    assert read is not None
    # The links a build tells by a set test are each read as the path of its story.
    assert not written or sorted(map(read, written)) == sorted(stories)
    for link in (url, f"{base.rstrip('/')}{url}", *(f"{base.rstrip('/')}{p}" for p in stories)):
        assert read(link) == urls.written_story_path(link)
        assert urls.may_lead_to(link, paths, read) == urls.may_lead_to(link, paths)
