"""The hourly publish as a fresh CI runner runs it: a new checkout of the content and
only what the publish workflow restores (the build cache; for GitHub Pages also the
last site). Each path ends byte-equal to a build from nothing, or refuses to deploy.
"""

from __future__ import annotations

import copy
import functools
import http.server
import json
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Result, tree, write_tree
from hypothesis import given
from hypothesis import strategies as st
from savedstate import set_unit_keys, state_files
from searchindex import live_entries, without_search
from storygen import make_story, write_story
from test_deploy import BUCKET, Server, Site, aws_env, live, run_deploy, s3, stored

from desk.build.writer import CHANGES, MARKER, StagedFiles
from desk.deploy.plan import MANIFEST
from desk.urls import USUAL_FILES

__all__ = ["aws_env", "s3"]  # fixtures, used by name

NOW = "2026-11-15T00:00:00Z"
HISTORY = ".well-known/desk-urls.json"
PAGES = ("index.html", "index.md", "index.json")


def fresh_runner(site: Site) -> None:
    """What a new runner has of the last run: the build cache, no site, new file stats."""
    shutil.rmtree(site.out, ignore_errors=True)
    for leftover in site.out.parent.glob(".public.desk-*"):
        # The spare and staging folders, and the lock file beside them.
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    checkout = site.content.with_name("checkout")
    shutil.copytree(site.content, checkout)
    shutil.rmtree(site.content)
    checkout.rename(site.content)


def hourly_changes(site: Site) -> None:
    """An edited story, a removed one, a new one."""
    edited = copy.deepcopy(site.stories[1])
    edited["headline"] = "An edited headline for the hourly run"
    write_story(site.content, edited)
    site.story_file(2).unlink()
    write_story(site.content, make_story(40, newsroom="science"))


def changes_build(desk: Callable[..., Result], site: Site) -> Result:
    return desk("build", "--content", str(site.content), "--out", str(site.out), "--now",
                NOW, "--jobs", "1", "--cache-dir", str(site.cache), "--changes-only")


def from_nothing(desk: Callable[..., Result], site: Site, tmp_path: Path,
                 history: bytes | None = None) -> dict[str, bytes]:
    """The site built from nothing (given the URL history the published site had)."""
    out = tmp_path / "from-nothing"
    given = tmp_path / "desk-urls.json"
    if history is not None:
        given.write_bytes(history)
    result = desk("build", "--content", str(site.content), "--out", str(out), "--now", NOW,
                  "--jobs", "1", "--no-cache",
                  *(["--url-history", str(given)] if history is not None else []))
    assert result.exit_code == 0, result.stderr
    return without_search(tree(out))


def test_changes_only_deploy_ends_equal_to_a_build_from_nothing(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 8)
    first = site.build()
    assert run_deploy(desk, s3, site, "hourly")[0].exit_code == 0
    fresh_runner(site)
    hourly_changes(site)

    result = changes_build(desk, site)
    assert result.exit_code == 0, result.stderr
    written = tree(site.out)
    listing = json.loads(written.pop(CHANGES))
    expected = from_nothing(desk, site, tmp_path, first[HISTORY])
    # The changes name the files of the first site the new one no longer has, in order,
    # and count the new one's: with what the store holds, that is the new site.
    removed = listing["removed"]
    assert removed == sorted(set(removed)) and set(removed) <= set(first)
    assert any(p.startswith(site.story_folder(2)) for p in removed)
    whole = (set(first) - set(removed)) | set(written)
    assert listing["files"] == len(whole - {MARKER})
    assert set(without_search(dict.fromkeys(whole, b""))) == set(expected)
    # Only what changed was written: the untouched stories' pages were not.
    untouched = site.story_folder(5)
    assert not any(p.startswith(untouched) for p in written)
    assert any(p.startswith(site.story_folder(1)) for p in written)
    written = without_search(written)
    assert {p: expected[p] for p in written} == written

    result, report = run_deploy(desk, s3, site, "hourly")
    assert result.exit_code == 0, result.stderr
    assert report["uploaded"] <= len(written)
    assert set(without_search(dict.fromkeys(report["planned"]["deletes"], b""))) == {
        p for p in without_search(first) if p not in expected}
    assert any(p.startswith(site.story_folder(2)) for p in report["planned"]["deletes"])
    served = live(s3, "hourly", report)
    assert without_search(served) == expected
    # The search index: laid out by the history of builds, finding the same.
    assert live_entries(write_tree(served, tmp_path / "served")) == live_entries(
        tmp_path / "from-nothing")


def test_changes_to_another_site_than_the_bucket_holds_are_refused(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 6)
    history = site.build()[HISTORY]
    assert run_deploy(desk, s3, site, "stale")[0].exit_code == 0
    stale_cache = tmp_path / "stale-cache"
    shutil.copytree(site.cache, stale_cache)
    # A later run publishes a change, but its cache is lost (a failed save, eviction…).
    hourly_changes(site)
    site.build()
    assert run_deploy(desk, s3, site, "stale")[0].exit_code == 0
    before = {k: v for k, v in s3.client().list_objects_v2(
        Bucket=BUCKET, Prefix="stale/").items() if k == "Contents"}
    shutil.rmtree(site.cache)
    stale_cache.rename(site.cache)
    fresh_runner(site)
    write_story(site.content, make_story(41, newsroom="science"))
    assert changes_build(desk, site).exit_code == 0

    result, report = run_deploy(desk, s3, site, "stale")
    assert result.exit_code == 3, result.stderr
    assert "Build the whole site" in report["error"]
    after = {k: v for k, v in s3.client().list_objects_v2(
        Bucket=BUCKET, Prefix="stale/").items() if k == "Contents"}
    assert after == before  # nothing uploaded or deleted

    # The workflow's fallback: the whole site, deployed as usual.
    site.build()
    result, report = run_deploy(desk, s3, site, "stale")
    assert result.exit_code == 0, result.stderr
    assert without_search(live(s3, "stale", report)) == from_nothing(desk, site, tmp_path,
                                                                     history)


def refused_changes(desk: Callable[..., Result], s3: Server, tmp_path: Path, prefix: str,
                    tamper: Callable[[Site], None]) -> tuple[Site, dict[str, Any]]:
    """A site deployed under `prefix`, the bucket then changed behind desk's back
    (`tamper`), a new story built as changes on a fresh runner: the site and the
    deploy's report, refused with nothing uploaded or deleted."""
    site = Site(desk, tmp_path, 5)
    site.build()
    assert run_deploy(desk, s3, site, prefix)[0].exit_code == 0
    tamper(site)
    before = stored(s3, prefix)
    fresh_runner(site)
    write_story(site.content, make_story(42, newsroom="science"))
    assert changes_build(desk, site).exit_code == 0
    result, report = run_deploy(desk, s3, site, prefix)
    assert result.exit_code == 3
    assert "Build the whole site" in report["error"]
    assert stored(s3, prefix) == before
    return site, report


def test_a_file_changed_in_the_bucket_behind_desk_s_back_refuses_changes(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    def tamper(site: Site) -> None:
        key = f"tampered/{site.story_folder(3)}index.html"
        s3.client().put_object(Bucket=BUCKET, Key=key, Body=b"<p>not desk's</p>")

    site, report = refused_changes(desk, s3, tmp_path, "tampered", tamper)
    assert site.story_folder(3) in report["error"]


def test_changes_against_a_manifest_without_the_whole_site_are_refused(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    # The changes name what the site lost, not what it has: the rest is the manifest's.
    # A manifest of the same site id that lacks a file cannot say the whole site, and
    # the file it lacks would be deleted as no one's.
    import gzip

    def tamper(site: Site) -> None:
        key = f"short/{MANIFEST}"
        manifest = json.loads(gzip.decompress(
            s3.client().get_object(Bucket=BUCKET, Key=key)["Body"].read()))
        del manifest["files"][f"{site.story_folder(4)}index.md"]
        s3.client().put_object(Bucket=BUCKET, Key=key,
                               Body=gzip.compress(json.dumps(manifest).encode()))

    _, report = refused_changes(desk, s3, tmp_path, "short", tamper)
    assert "manifest does not list the site" in report["error"]


def test_changes_with_no_usable_cache_are_the_whole_site(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 5)
    site.build()
    assert run_deploy(desk, s3, site, "lost")[0].exit_code == 0
    fresh_runner(site)
    for state in state_files(site.cache):
        state.write_bytes(b"SQLite format 3\x00\x10\x00")  # cut short
    hourly_changes(site)
    assert changes_build(desk, site).exit_code == 0
    written = tree(site.out)
    assert json.loads(written.pop(CHANGES))["base"] == ""
    expected = from_nothing(desk, site, tmp_path)
    assert without_search(written) == expected
    result, report = run_deploy(desk, s3, site, "lost")
    assert result.exit_code == 0, result.stderr
    assert without_search(live(s3, "lost", report)) == expected


def restore(site: Site, saved: Path) -> None:
    """The Pages workflow's restore: the cache and the last site, from one saved copy."""
    fresh_runner(site)
    shutil.rmtree(site.cache)
    shutil.copytree(saved / "cache", site.cache)
    shutil.copytree(saved / "public", site.out)


def save(site: Site, saved: Path) -> None:
    shutil.rmtree(saved, ignore_errors=True)
    shutil.copytree(site.cache, saved / "cache")
    shutil.copytree(site.out, saved / "public")


def test_restored_state_that_does_not_match_still_builds_right(
        desk: Callable[..., Result], tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 8)
    history = site.build()[HISTORY]
    saved = tmp_path / "saved"
    save(site, saved)

    # From another commit: the content moved on since the state was saved.
    restore(site, saved)
    hourly_changes(site)
    assert without_search(site.build()) == from_nothing(desk, site, tmp_path, history)

    # A state file that is corrupt.
    restore(site, saved)
    for state in state_files(site.cache):
        state.write_bytes(state.read_bytes()[: len(state.read_bytes()) * 2 // 3])
    assert without_search(site.build()) == from_nothing(desk, site, tmp_path)

    # A site restored in part: files the state vouches for are missing.
    restore(site, saved)
    shutil.rmtree(site.out / site.story_folder(4))
    (site.out / "index.json").unlink()
    assert without_search(site.build()) == from_nothing(desk, site, tmp_path)
    assert (site.out / site.story_folder(4) / "index.html").is_file()

    # Made by other code: every key changes, so every unit is rendered again.
    restore(site, saved)
    for state in state_files(site.cache):
        assert set_unit_keys(state, "another desk's key") > 8
    assert without_search(site.build()) == from_nothing(desk, site, tmp_path)


def test_a_manifest_records_the_site_it_deployed(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    import gzip

    site = Site(desk, tmp_path, 3)
    site.build()
    assert run_deploy(desk, s3, site, "id")[0].exit_code == 0
    manifest = json.loads(gzip.decompress(s3.client().get_object(
        Bucket=BUCKET, Key=f"id/{MANIFEST}")["Body"].read()))
    marker = (site.out / ".desk-site").read_text()
    assert f"site-id: {manifest['site_id']}" in marker


@pytest.fixture
def live_site(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The published site as readers get it: a folder served over HTTP on loopback."""
    folder = tmp_path / "live"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", folder
    finally:
        server.shutdown()
        server.server_close()


def test_hold_back_on_a_fresh_runner_keeps_published_pages_from_the_live_site(
        desk: Callable[..., Result], s3: Server, tmp_path: Path,
        live_site: tuple[str, Path]) -> None:
    base_url, served = live_site
    site = Site(desk, tmp_path, 6)
    common = ("--content", str(site.content), "--now", NOW, "--jobs", "1", "--cache-dir",
              str(site.cache), "--base-url", base_url, "--no-search")
    assert desk("build", "--out", str(site.out), *common).exit_code == 0
    assert run_deploy(desk, s3, site, "held")[0].exit_code == 0
    shutil.copytree(site.out, served, dirs_exist_ok=True)
    published = site.story_folder(3)
    before = {name: (served / published / name).read_bytes() for name in PAGES}

    fresh_runner(site)
    broken = copy.deepcopy(site.stories[3])
    broken["headline"] = "A broken edit that must not go out"
    broken["key_facts"][0]["cites"][0]["manifest_id"] = "9999999"
    write_story(site.content, broken)
    write_story(site.content, make_story(60, newsroom="science"))
    broken_new = make_story(61, newsroom="science")
    broken_new["key_facts"][0]["cites"][0]["manifest_id"] = "9999999"
    write_story(site.content, broken_new)

    for flags in ((), ("--render-all",)):  # the hourly run, then the workflow's fallback
        shutil.rmtree(site.out, ignore_errors=True)
        result = desk("build", "--out", str(site.out), *common, "--changes-only",
                      "--hold-back", *flags)
        assert result.exit_code == 3, result.stderr
        assert "its last published pages stay at" in result.stdout + result.stderr, (
            result.stdout + result.stderr)
        listing = json.loads((site.out / CHANGES).read_text())
        # The held story's pages are part of the site: kept from the base, or written.
        written = tree(site.out)
        assert all(published + name in written or listing["base"]
                   and published + name not in listing["removed"] for name in PAGES)
        assert not any("story-number-61" in f for f in written)
        result, report = run_deploy(desk, s3, site, "held")
        assert result.exit_code == 0, result.stderr
        bucket = stored(s3, "held")
        assert {name: bucket[published + name] for name in PAGES} == before
        assert not any("story-number-61" in p or b"story-number-61" in data
                       or b"A broken edit" in data for p, data in bucket.items())
        assert any("story-number-60" in p for p in bucket)


_SEGMENTS = st.sampled_from(["a", "b", "ab", "a-b", "z", "index.html.d", "Z"])


@given(folders=st.dictionaries(st.lists(_SEGMENTS, max_size=3).map(
           lambda parts: "/" + "".join(p + "/" for p in parts)), st.sampled_from([2, 3])),
       names=st.sets(st.lists(_SEGMENTS, min_size=1, max_size=3).map("/".join)))
def test_the_kept_files_noted_by_folder_are_the_files_named(folders: dict[str, int],
                                                          names: set[str]) -> None:
    # What a build keeps is noted by folder where it can: the same files as named.
    staged = StagedFiles()
    every: set[str] = set()
    for folder, count in folders.items():
        staged.folders[folder] = count
        every.update(folder[1:] + name for name in USUAL_FILES[count])
    staged.names.update(names - every)
    every |= names
    assert len(staged) == len(every) and set(staged) == every
    assert all(name in staged for name in every)
    assert not any(name + "x" in staged for name in every if name + "x" not in every)
