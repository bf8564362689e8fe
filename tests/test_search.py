"""Search across the whole archive, in sealed bundles and a fresh one, in a real browser.

The corpus spans more than a year and the bundles are made tiny, so that the archive is
split into several sealed bundles as a large site's would be.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from conftest import child_pids, tree, write_tree
from savedstate import execute, state_files
from searchindex import bundles, live_entries, without_search
from storygen import REPO, make_story, write_story, write_withdrawal
from test_browser import CHROMIUM, CHROMIUM_ARGS, require_chromium

from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.config import Config, load_config
from desk.content.catalog import Clock

NOW = datetime(2026, 6, 1, tzinfo=UTC)
START = datetime(2025, 1, 5, 8, tzinfo=UTC)
OLD = 2  # published more than a year before the newest story
OLD_HEADLINE = "Glacier sensors record a silent winter"
OLD_PATH = "/stories/2025-02-06/story-number-2/"
BODY_WORD = "bathymetric"  # only in the old story's body
NEW_WORD = "orographic"  # replaces it in the edit
WITHDRAWN = 20
WITHDRAWN_HEADLINE = "Copper smelter fined over emissions"
NEW_HEADLINE = "Harbour cranes go electric"


def story(n: int, **overrides: Any) -> dict[str, Any]:
    return make_story(n, published_at=START + timedelta(days=16 * n), **overrides)


def old_story(word: str) -> dict[str, Any]:
    data = story(OLD, headline=OLD_HEADLINE)
    data["sections"][0]["paragraphs"][0]["markdown"] = f"A {word} survey of the lake bed."
    return data


def write_corpus(content: Path) -> None:
    """30 stories over 15 months; two newer ones carry every word of the old headline
    in their bodies, so the headline has to win on rank, not on being the only match."""
    for n in range(30):
        data = old_story(BODY_WORD) if n == OLD else story(n)
        if n == WITHDRAWN:
            data["headline"] = WITHDRAWN_HEADLINE
        if n in (17, 28):
            data["sections"][0]["paragraphs"][1]["markdown"] = (
                "Glacier sensors record a silent winter, a silent spring and a loud summer.")
        write_story(content, data)
    assert START + timedelta(days=16 * 29) - (START + timedelta(days=16 * OLD)) > timedelta(
        days=366)


def config_for(root: Path, name: str = "public") -> Config:
    return load_config(REPO / "pyproject.toml", {
        "cache_dir": root / "cache", "content_dir": root / "content",
        "output_dir": root / name, "search_bundle_pages": 8, "search_fresh_pages": 3})


def hourly_change(content: Path) -> None:
    """Two new stories, the old one edited (a word of its body replaced), one withdrawn."""
    write_story(content, story(30))
    write_story(content, story(31, headline=NEW_HEADLINE))
    write_story(content, old_story(NEW_WORD), "story-number-2.json")
    write_withdrawal(content, str(10_000 + WITHDRAWN), withdrawn_at="2026-05-30T00:00:00Z")


def entry_inodes(site: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_ino for p in site.glob("pagefind/*/pagefind-entry.json")}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The site folder (built by each test) served over HTTP."""
    site = tmp_path / "public"
    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield site, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def search(browser: Any, base_url: str, term: str) -> list[str]:
    """The result links the search page shows for a term, in order."""
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(f"{base_url}/search/?q={quote(term)}")
    expect(page.locator("#search-status")).to_contain_text("found for", timeout=15_000)
    links = page.locator(".search-result h2 a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))")
    page.close()
    return links


@pytest.mark.browser
def test_an_old_story_is_found_first_by_its_headline_and_by_a_body_word(
        browser: Any, served: tuple[Path, str], tmp_path: Path) -> None:
    site, base_url = served
    write_corpus(tmp_path / "content")
    assert build(config_for(tmp_path), Clock(NOW)).ok
    manifest = bundles(site)
    assert len(manifest["bundles"]) >= 4 and manifest["stale"] == []
    assert all(href.startswith("/pagefind/s-") for href in manifest["bundles"])  # all sealed

    by_headline = search(browser, base_url, OLD_HEADLINE)
    assert by_headline[0] == OLD_PATH
    assert {url.split("/")[3] for url in by_headline[1:3]} == {"story-number-17",
                                                               "story-number-28"}
    assert search(browser, base_url, BODY_WORD) == [OLD_PATH]
    assert search(browser, base_url, "zyzzyvas") == []


@pytest.mark.browser
def test_an_hourly_change_reindexes_the_fresh_bundle_and_at_most_one_other(
        browser: Any, served: tuple[Path, str], tmp_path: Path) -> None:
    site, base_url = served
    content = tmp_path / "content"
    write_corpus(content)
    config = config_for(tmp_path)
    assert build(config, Clock(NOW)).ok
    before = entry_inodes(site)
    withdrawn_url = next(url for url in live_entries(site) if f"story-number-{WITHDRAWN}/" in url)
    assert search(browser, base_url, WITHDRAWN_HEADLINE) == [withdrawn_url]

    hourly_change(content)
    assert build(config, Clock(NOW)).ok
    after = entry_inodes(site)
    indexed = {name for name, inode in after.items() if before.get(name) != inode}
    assert "fresh" in indexed and len(indexed) <= 2, indexed  # and one compaction at most
    assert len(set(before) & set(after)) >= 3  # the other sealed bundles kept as they were
    assert bundles(site)["stale"]  # the old story's entry, or the withdrawn one's

    assert search(browser, base_url, NEW_WORD) == [OLD_PATH]
    assert search(browser, base_url, BODY_WORD) == []
    assert search(browser, base_url, WITHDRAWN_HEADLINE) == []
    assert search(browser, base_url, NEW_HEADLINE)[0].endswith("/story-number-31/")

    # What a search finds is what a build from nothing finds; the files but the index too.
    reference = config_for(tmp_path, "reference")
    assert build(reference, Clock(NOW), cache=BuildCache()).ok
    assert live_entries(site) == live_entries(reference.output_dir)
    assert without_search(tree(site)) == without_search(tree(reference.output_dir))


def test_a_build_from_nothing_is_deterministic_search_bundles_included(tmp_path: Path) -> None:
    write_corpus(tmp_path / "content")
    sites = []
    for name in ("one", "two"):
        config = config_for(tmp_path, name)
        assert build(config, Clock(NOW), cache=BuildCache()).ok
        sites.append(tree(config.output_dir))
    assert sites[0] == sites[1]
    assert sum(name.endswith(".pf_fragment") for name in sites[0]) == 30


def test_without_the_saved_state_the_index_is_made_anew_from_the_stories(
        tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_corpus(content)
    config = config_for(tmp_path)
    assert build(config, Clock(NOW)).ok
    (saved,) = state_files(tmp_path / "cache")
    sealed = bundles(config.output_dir)["bundles"][0].split("/")[2]
    assert execute(saved, "UPDATE search_entry SET bundle = '../../etc' WHERE bundle = ?",
                   sealed)
    hourly_change(content)
    assert build(config, Clock(NOW)).ok  # the state is refused: everything sealed anew
    assert not (tmp_path / "etc").exists() and bundles(config.output_dir)["stale"] == []
    reference = config_for(tmp_path, "reference")
    assert build(reference, Clock(NOW), cache=BuildCache()).ok
    assert tree(config.output_dir) == tree(reference.output_dir)


def test_changes_only_builds_index_what_a_fresh_runner_lacks(tmp_path: Path) -> None:
    """On a fresh runner the site is not on disk: the fresh bundle comes from the copies
    kept with the build cache, and a bundle sealed anew from pages rendered again; the
    site the changes make finds what a build from nothing finds."""
    from desk.build.target import ChangesOnly
    from desk.build.writer import CHANGES, MARKER

    content = tmp_path / "content"
    write_corpus(content)
    config = config_for(tmp_path)
    clock = Clock(NOW)
    assert build(config, clock, jobs=1).ok
    for n, days in ((40, 5), (41, 4)):
        write_story(content, make_story(n, published_at=NOW - timedelta(days=days)))
    assert build(config, clock, jobs=1).ok
    assert list((tmp_path / "cache").glob("*.search/*.html"))  # the fresh pages' copies
    served = tmp_path / "served"  # what the store holds: the last whole site
    config.output_dir.rename(served)
    for spare in tmp_path.glob(".public.desk-*"):
        shutil.rmtree(spare)

    made: set[str] = set()
    for change in (lambda: hourly_change(content), lambda: write_story(
            content, make_story(42, published_at=NOW - timedelta(days=1)))):
        change()
        report = build(config, clock, ChangesOnly(config.output_dir), jobs=1)
        assert report.ok, report.findings
        changes = tree(config.output_dir)
        listing = json.loads(changes.pop(CHANGES))
        changes.pop(MARKER)
        removed = set(listing["removed"])
        site = {**{k: v for k, v in tree(served).items() if k not in removed | {MARKER}},
                **changes}
        assert len(site) == listing["files"]
        made |= {name.split("/")[1] for name in changes if name.startswith("pagefind/s-")}
        shutil.rmtree(served)
        write_tree(site, served)

        nothing = config_for(tmp_path, "from-nothing")
        assert build(nothing, clock, cache=BuildCache(), jobs=1).ok
        assert live_entries(served) == live_entries(tmp_path / "from-nothing")
        assert without_search(tree(served)) == without_search(tree(tmp_path / "from-nothing"))
    # Bundles were sealed anew: the fresh stories, then a stale one from pages rendered
    # again (this build rendered none of its stories).
    assert len(made) >= 2


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_build_failing_while_pagefind_runs_leaves_no_process_and_no_scratch_folder(
        tmp_path: Path) -> None:
    """Pagefind indexes the new stories while the pages around them render: when one of
    those fails, the run is stopped and waited for, its scratch folder removed, and the
    site left as it was."""
    write_corpus(tmp_path / "content")
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    config = config_for(tmp_path).model_copy(update={"templates_dir": templates})
    assert build(config, Clock(NOW), jobs=1).ok
    before, running = tree(config.output_dir), child_pids()
    hourly_change(tmp_path / "content")  # new stories: the fresh bundle is indexed again
    (templates / "newsroom.html").write_text("{{ nope.nope }}")
    report = build(config, Clock(NOW), jobs=1)
    assert not report.ok
    assert report.errors[0].format().startswith(f"{templates / 'newsroom.html'}:1:")
    assert child_pids() == running
    assert tree(config.output_dir) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "content", "public",
                                                          "templates"]
