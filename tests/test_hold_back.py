"""Holding back: `desk build --hold-back` publishes every good story while a bad one waits,
keeping its last published pages if it has any; errors about no single story still
refuse the build, and `desk check` stays all-or-nothing."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from conftest import tree
from hypothesis import given, settings
from hypothesis import strategies as st
from storygen import REPO, make_corpus, make_story, write_story

from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.cli import HELD_BACK, main
from desk.config import load_config
from desk.content.catalog import Clock
from desk.content.findings import Finding
from desk.content.history import read_history_file
from desk.publish.annotations import annotation, pointer_line

NOW = "2026-11-15T00:00:00Z"
PAGES = ("index.html", "index.md", "index.json")
ANNOTATION = re.compile(r"^::(error|warning) file=([^,]*),line=(\d+),title=([^:]*)::(.*)$")


def build_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["build", "--config", str(REPO / "pyproject.toml"), "--content",
            str(tmp_path / "content"), "--out", str(tmp_path / "public"), "--cache-dir",
            str(tmp_path / "cache"), "--now", NOW, "--no-search", *extra]


def run(args: list[str], **env: str | None) -> Result:
    base: dict[str, str | None] = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}
    return CliRunner().invoke(main, args, env=base | env)


def pages_of(site: Path, url_path: str) -> dict[str, bytes]:
    return {name: (site / url_path.strip("/") / name).read_bytes() for name in PAGES}


def dangling(data: dict[str, Any], headline: str) -> dict[str, Any]:
    """A story whose first key fact cites a manifest it does not list."""
    data = json.loads(json.dumps(data))
    data["headline"] = headline
    data["key_facts"][0]["cites"][0]["manifest_id"] = "9999999"
    return data


def unescape(value: str) -> str:
    """A workflow command's value as the runner reads it."""
    for escaped, plain in (("%2C", ","), ("%3A", ":"), ("%0A", "\n"), ("%0D", "\r"),
                           ("%25", "%")):
        value = value.replace(escaped, plain)
    return value


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def site_texts(site: Path) -> dict[str, bytes]:
    return {name: data for name, data in tree(site).items() if name != ".desk-site"}


def test_a_bad_story_is_held_back_and_every_other_one_publishes(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 9)
    site = tmp_path / "public"
    assert run(build_args(tmp_path)).exit_code == 0
    published = "/stories/2026-11-10/story-number-4/"
    before = pages_of(site, published)
    old_headline = json.loads(before["index.json"])["headline"].encode()

    # An edit breaks a published story; a new story is broken; two new ones are good.
    broken_path = next(content.rglob("story-number-4.json"))
    old = json.loads(broken_path.read_text())
    write_story(content, dangling(old, "Headline of an edit that breaks"), broken_path.name)
    new_broken = write_story(content, dangling(make_story(40), "Headline never published"))
    for n in (41, 42):
        write_story(content, make_story(n))
    summary, report = tmp_path / "summary.md", tmp_path / "report.json"
    result = run(build_args(tmp_path, "--hold-back", "--report", str(report)),
                 GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    assert result.exit_code == HELD_BACK, result.output

    # The published story's pages are as they were, byte for byte, and it keeps its place.
    assert pages_of(site, published) == before
    files = site_texts(site)
    assert not any(b"Headline of an edit that breaks" in data for data in files.values())
    for name in ("index.html", "feed.xml", "atom.xml", "feed.json", "llms.txt",
                 "n/climate/index.html", "editions/2026-11-10T07/index.html"):
        assert old_headline in files[name], name
    assert published.encode() in files["sitemap.xml"]
    # The new broken story appears nowhere: no page, list, feed, sitemap, llms file, and
    # so no page for the search index to take.
    assert not any(b"Headline never published" in data or b"story-number-40" in data
                   or b'"10040"' in data for data in files.values())
    indexed = [name for name, data in files.items() if b"data-pagefind-body" in data]
    assert f"{published.strip('/')}/index.html" in indexed and len(indexed) == 11
    # Every other new story is published.
    for n in (41, 42):
        url = f"/stories/2026-11-14/story-number-{n}/"
        assert f"{url.strip('/')}/index.html" in files
        assert url.encode() in files["sitemap.xml"] and url.encode() in files["feed.xml"]

    # The output names what was held, and where.
    assert f"Held back {broken_path} (its last published pages stay at {published})" in (
        result.output)
    assert f"Held back {new_broken} (new: it appears nowhere until fixed)" in result.output
    annotations = [ANNOTATION.match(line) for line in result.stdout.splitlines()
                   if line.startswith("::")]
    # Two errors in each file; and the published one's headline changed with no change
    # record, a silent edit (desk.content.edits), told as a warning.
    assert all(annotations) and len(annotations) == 5
    assert [unescape(m[5]).split(" ")[0] for m in annotations if m and m[1] == "warning"] == [
        "[silent-edit]"]
    found = {(unescape(m[2]), int(m[3]), unescape(m[4]), unescape(m[5]).split(" ")[0])
             for m in annotations if m and m[1] == "error"}
    for path in (broken_path, new_broken):
        line = line_of(path, '"manifest_id": "9999999"')
        assert (str(path), line, "Story held back", "[unknown-manifest]") in found
        assert (str(path), line_of(path, '"cited_manifest_ids"'), "Story held back",
                "[cited-ids-mismatch]") in found
    markdown = summary.read_text()
    assert "**2 story file(s) held back**" in markdown
    assert f"- `{broken_path}`: its last published pages stay at {published}" in markdown
    assert f"- `{new_broken}`: new: it appears nowhere until fixed" in markdown
    assert "manifest '9999999' is not in /manifests" in markdown
    data = json.loads(report.read_text())
    assert data["ok"] is True and data["published"] == 11
    assert [(h["path"], h["kept"]) for h in data["held_back"]] == [
        (str(broken_path), published), (str(new_broken), None)]
    assert {f["code"] for f in data["held_back"][1]["findings"]} == {
        "unknown-manifest", "cited-ids-mismatch"}


def test_errors_about_no_single_story_still_refuse_the_whole_build(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 3)
    settings_file = tmp_path / "desk.toml"
    settings_file.write_text('base_url = "https://news.example.org"\n')
    site = tmp_path / "public"
    args = ["build", "--config", str(settings_file), "--now", NOW, "--no-search",
            "--hold-back"]
    assert run(args).exit_code == 0
    built = tree(site)
    write_story(content, dangling(make_story(40), "Headline never published"))

    # A template error: nothing is written, and every error is named, the story's too.
    (tmp_path / "templates").mkdir()
    story_page = tmp_path / "templates" / "story.html"
    story_page.write_text((REPO / "templates" / "story.html").read_text() + "{% if %}\n")
    result = run(args)
    assert result.exit_code == 1, result.output
    assert "story.html" in result.output and "Build failed" in result.output
    assert "manifest '9999999' is not in /manifests" in result.output
    assert tree(site) == built
    story_page.unlink()

    # A settings error, a missing content folder, a bad withdrawal file.
    settings_file.write_text('base_url = "https://news.example.org"\npage_size = "many"\n')
    result = run(args)
    assert result.exit_code == 2 and "page_size" in result.output
    settings_file.write_text('base_url = "https://news.example.org"\n'
                             'content_dir = "nowhere"\n')
    result = run(args)
    assert result.exit_code == 1 and "content folder not found" in result.output
    settings_file.write_text('base_url = "https://news.example.org"\n')
    (content / "withdrawn").mkdir()
    (content / "withdrawn" / "w.json").write_text("{")
    result = run(args)
    assert result.exit_code == 1 and "w.json" in result.output
    assert tree(site) == built


def test_check_and_a_plain_build_stay_all_or_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 3)
    site = tmp_path / "public"
    assert run(build_args(tmp_path)).exit_code == 0
    built = tree(site)
    write_story(content, dangling(make_story(40), "Headline never published"))
    check = ["check", "--config", str(REPO / "pyproject.toml"), "--content", str(content)]
    result = run(check)
    assert result.exit_code == 1 and "[unknown-manifest]" in result.output
    assert run([*check, "--hold-back"]).exit_code == 2  # no such option
    result = run(build_args(tmp_path))
    assert result.exit_code == 1 and "Build failed" in result.output
    assert tree(site) == built


def config_for(tmp_path: Path, name: str) -> Any:
    return load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": tmp_path / "content",
        "output_dir": tmp_path / name})


BUILT_AT = datetime(2026, 11, 15, tzinfo=UTC)


def test_a_fixed_story_publishes_and_the_build_matches_one_from_nothing(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 12)
    config = config_for(tmp_path, "public")
    held = Clock(BUILT_AT, hold_back=True)
    assert build(config, held).ok
    edited = next(content.rglob("story-number-5.json"))
    good = json.loads(edited.read_text())
    write_story(content, dangling(good, "A headline held back"), edited.name)
    truncated = next(content.rglob("story-number-8.json"))
    truncated.write_text(truncated.read_text()[:200])  # no longer JSON
    new = write_story(content, dangling(make_story(40), "A new headline held back"))
    for _ in range(2):  # the next hourly run too, from what the first held build left
        report = build(config, held)
        assert report.ok
        assert [(h.path, h.kept) for h in report.held_back] == [
            (str(edited), "/stories/2026-11-10/story-number-5/"),
            (str(truncated), "/stories/2026-11-10/story-number-8/"),
            (str(new), None)]
    site = tree(config.output_dir)
    assert b"A headline held back" not in site["feed.xml"]
    assert b"Headline of story 8" in site["feed.xml"]

    # Fixed: the edit publishes, the new story too, as a build from nothing has them.
    write_story(content, good | {"headline": "A headline fixed"}, edited.name)
    write_story(content, make_story(8, published_at=datetime(2026, 11, 10, 8, 16, tzinfo=UTC),
                                    newsroom="markets"), truncated.name)
    write_story(content, make_story(40, headline="A new headline fixed"), new.name)
    report = build(config, held)
    assert report.ok and not report.held_back and report.reused > 0
    site = tree(config.output_dir)
    assert b"A headline fixed" in site["stories/2026-11-10/story-number-5/index.html"]
    assert b"A new headline fixed" in site["feed.xml"]
    history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
    fresh = config_for(tmp_path, "fresh")
    assert build(fresh, Clock(BUILT_AT), cache=BuildCache(history=history)).ok
    assert site == tree(fresh.output_dir)


def test_a_held_story_keeps_its_url_and_id_from_a_story_that_would_take_them(
        tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 4)
    config = config_for(tmp_path, "public")
    clock = Clock(BUILT_AT, hold_back=True)
    assert build(config, clock).ok
    url = "/stories/2026-11-10/story-number-2/"
    before = pages_of(config.output_dir, url)
    path = next(content.rglob("story-number-2.json"))
    old = json.loads(path.read_text())
    path.write_text(json.dumps(old)[:-40])  # no longer JSON; its id still readable
    # A new story at its URL (it sorts first, so it is the file a plain check lets by) and
    # another with its id.
    taker = write_story(content, make_story(2, published_at=datetime(2026, 11, 10, 6, 34,
                                            tzinfo=UTC)) | {"id": "20002"}, "a.json")
    twin = write_story(content, make_story(30) | {"id": old["id"]})
    report = build(config, clock)
    assert report.ok, report.findings
    assert pages_of(config.output_dir, url) == before
    held = {h.path: h for h in report.held_back}
    assert held[str(path)].kept == url
    assert [f.code for f in held[str(taker)].findings] == ["duplicate-url"]
    # The twin's text under a published story's id is no change record's either.
    assert [f.code for f in held[str(twin)].findings] == ["duplicate-id", "silent-edit"]
    assert held[str(taker)].kept is None and held[str(twin)].kept is None


def test_without_its_last_pages_a_published_story_is_held_as_new(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 3)
    config = config_for(tmp_path, "public")
    assert build(config, Clock(BUILT_AT)).ok
    path = next(content.rglob("story-number-1.json"))
    write_story(content, dangling(json.loads(path.read_text()), "Broken"), path.name)
    # A fresh runner: the URL history from the live site, but not its pages.
    history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
    fresh = config_for(tmp_path, "runner")
    report = build(fresh, Clock(BUILT_AT, hold_back=True), cache=BuildCache(history=history))
    assert report.ok and [h.kept for h in report.held_back] == [None]
    assert report.held_back[0].note.startswith(
        "its last published pages (/stories/2026-11-10/story-number-1/) are not in ")
    assert not (fresh.output_dir / "stories/2026-11-10/story-number-1").exists()


def members(value: Any, pointer: str = "") -> list[str]:
    """Every JSON pointer into a value."""
    found = []
    children = (value.items() if isinstance(value, dict)
                else enumerate(value) if isinstance(value, list) else ())
    for key, child in children:
        inner = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
        found += [inner, *members(child, inner)]
    return found


def replaced(value: Any, parts: list[str], marker: str) -> Any:
    if not parts:
        return marker
    head = parts[0].replace("~1", "/").replace("~0", "~")
    if isinstance(value, list):
        return [replaced(v, parts[1:], marker) if i == int(head) else v
                for i, v in enumerate(value)]
    return {k: replaced(v, parts[1:], marker) if k == head else v for k, v in value.items()}


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=20)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=4), JSON, max_size=5), st.booleans())
def test_a_pointer_s_line_is_where_its_member_starts(data: dict[str, Any], indent: bool) -> None:
    text = json.dumps(data, indent=2 if indent else None, ensure_ascii=False)
    for pointer in members(data):
        marker = "\u2063marker\u2063"
        shown = json.dumps(replaced(data, pointer.split("/")[1:], marker),
                           indent=2 if indent else None, ensure_ascii=False)
        expected = next(n for n, line in enumerate(shown.split("\n"), 1) if marker in line)
        assert pointer_line(text, pointer) == expected, pointer
    assert pointer_line(text, "/no such member/0") == 1
    assert pointer_line("{ not json", "/a") == 1


def test_annotations_escape_what_the_runner_unescapes(tmp_path: Path) -> None:
    story = tmp_path / "a,b:c.json"
    story.write_text('{\n  "id": "1",\n  "headline": "x"\n}\n')
    finding = Finding(str(story), "/headline", "some-code", "100% wrong:\r\nsee, here")
    line = annotation(finding, "Held: back, now", "held back: new")
    match = ANNOTATION.match(line)
    assert match is not None and "\n" not in line and "\r" not in line
    assert (match[1], unescape(match[2]), match[3], unescape(match[4])) == (
        "error", str(story), "3", "Held: back, now")
    assert unescape(match[5]) == ("[some-code] /headline: 100% wrong:\r\nsee, here "
                                  "(held back: new)")
    warning = ANNOTATION.match(annotation(Finding(str(story), "", "x", "m", "warning",
                                                  line=2, column=1), "t"))
    assert warning is not None and warning.groups()[:3] == (
        "warning", str(story).replace(",", "%2C").replace(":", "%3A"), "2")


def test_a_story_held_for_another_file_and_released_matches_a_build_from_nothing(
        tmp_path: Path) -> None:
    # Its file never changes: another file, first in path order, takes its id and goes.
    # The held build kept its last pages under a key of their own, which the next build
    # must not carry as the story's (the saved state says which stories were held).
    content = tmp_path / "content"
    stories = make_corpus(content, 6)
    config = config_for(tmp_path, "public")
    held = Clock(BUILT_AT, hold_back=True)
    assert build(config, held).ok
    victim = stories[3]
    rival = write_story(content, make_story(30, published_at=datetime.fromisoformat(
        victim["published_at"]), id=victim["id"], headline="A rival with its id"), "0.json")
    report = build(config, held)
    kept = f"/stories/{victim['published_at'][:10]}/{victim['slug']}/"
    assert report.ok and kept in [h.kept for h in report.held_back]
    rival.unlink()
    report = build(config, held)
    assert report.ok and not report.held_back and report.reused > 0
    history, _ = read_history_file(config.output_dir / ".well-known/desk-urls.json")
    fresh = config_for(tmp_path, "fresh")
    assert build(fresh, Clock(BUILT_AT), cache=BuildCache(history=history)).ok
    assert tree(config.output_dir) == tree(fresh.output_dir)
