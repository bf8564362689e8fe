"""The URL history: how moves are recorded, what a history file may hold, and which copy a
build starts from (the saved state, the site it replaces, or the last deploy's)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from savedstate import execute
from storygen import REPO, make_story, write_story

from desk import urls
from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.build.state import SavedState, read_state, write_state
from desk.config import load_config
from desk.content.catalog import Clock
from desk.content.history import (
    _USUAL_STORY_PATH,
    UrlHistory,
    _is_story_path,
    _usual_paths,
    history_from_json,
    read_history_file,
    redirects,
    site_file,
)

A, B, C = (f"/stories/2026-11-14/{slug}/" for slug in ("a", "b", "c"))
NOW = datetime(2026, 11, 15, tzinfo=UTC)


def test_moves_append_and_a_url_belongs_to_its_last_story() -> None:
    history = UrlHistory().advance([("1", A)])
    assert history.advance([("1", A)]) is history  # nothing moved: the same value
    history = history.advance([("1", B)]).advance([("1", C)])
    assert history.urls == {"1": (A, B, C)}
    assert [(r.path, r.target) for r in redirects(history, {"1": C}, {C: None})] == [
        (A, C), (B, C)]
    back = history.advance([("1", A)])  # moved back: A is its newest URL again
    assert back.urls == {"1": (B, C, A)} and back.latest("1") == A
    taken = history.advance([("1", C), ("2", A)])  # another story published at A
    assert taken.urls == {"1": (B, C), "2": (A,)}
    assert [(r.path, r.target) for r in redirects(taken, {"1": C, "2": A}, {A: 0, C: 0})] == [
        (B, C)]
    # A live page (a draft in the preview) is never replaced by a redirect.
    assert redirects(history, {"1": C}, {A: None, C: None})[0].path == B


def _moved_one_page_at_a_time(urls: dict[str, tuple[str, ...]],
                               pages: list[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """The rule of advance, page by page: the path leaves whichever list holds it and
    becomes its id's newest."""
    lists = {k: list(v) for k, v in urls.items()}
    for story_id, path in sorted(pages):
        for paths in lists.values():
            if path in paths:
                paths.remove(path)
        lists.setdefault(story_id, []).append(path)
    return {k: tuple(v) for k, v in sorted(lists.items()) if v}


_PATHS = [f"/stories/2026-11-14/s{n}/" for n in range(8)]


@st.composite
def _history_and_pages(draw: st.DrawFn) -> tuple[dict[str, tuple[str, ...]],
                                                 list[tuple[str, str]]]:
    ids = [str(n) for n in range(6)]
    owned = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(_PATHS)),
                          unique_by=lambda pair: pair[1]))
    urls: dict[str, tuple[str, ...]] = {}
    for story_id, path in owned:
        urls[story_id] = (*urls.get(story_id, ()), path)
    pages = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(_PATHS)),
                          unique_by=(lambda pair: pair[0], lambda pair: pair[1])))
    return dict(sorted(urls.items())), pages


@given(_history_and_pages())
def test_advance_moves_only_what_moved_as_the_rule_says(
        case: tuple[dict[str, tuple[str, ...]], list[tuple[str, str]]]) -> None:
    """Whatever moved, returned to an old URL or took another story's: the history is
    the one the rule makes page by page, ids in order; unchanged when nothing moved."""
    urls, pages = case
    history = UrlHistory(urls)
    after = history.advance(pages)
    assert after.urls == _moved_one_page_at_a_time(urls, pages)
    assert list(after.urls) == sorted(after.urls)
    if all(history.latest(story_id) == path for story_id, path in pages):
        assert after is history


@pytest.mark.parametrize("data,where", [
    ({"1": ["/stories/2026-11-14/../../etc/"]}, "/1/0"),
    ({"1": ["/stories/2026-11-14/a/", "/../x/"]}, "/1/1"),
    ({"1": ["/stories/2026-11-14/UPPER/"]}, "/1/0"),
    ({"1": ["/stories/2026-11-14/a"]}, "/1/0"),
    ({"1": ["/n/x/"]}, "/1/0"),
    ({"1": ["/stories/2026-11-14/a/"], "2": ["/stories/2026-11-14/a/"]}, "/2/0"),
    ({"a/b": "x"}, "/a~1b"),
    ({"1": []}, "/1"),
    ({"1": [7]}, "/1/0"),
    # Two usual paths in one string, which the check of every path at once, each on a
    # line of its own, must not take for two.
    ({"1": ["/stories/2026-11-14/a/\n/stories/2026-11-14/b/"]}, "/1/0"),
    ({"1": ["/stories/2026-11-14/a/"], "2": ["/stories/2026-11-14/b-/"]}, "/2/0"),
    (["/stories/2026-11-14/a/"], "/"),
])
def test_a_history_holds_story_paths_only(data: object, where: str) -> None:
    with pytest.raises(ValueError, match=f"^{where}: "):
        history_from_json(data)


def test_history_files_that_cannot_be_read_are_findings(tmp_path: Path) -> None:
    path = tmp_path / "desk-urls.json"
    assert read_history_file(path) == (None, [])
    for text, pointer in (("{broken", ""), ('{"version": 3, "stories": {}}', "/version"),
                          ('{"version": 1, "stories": {"1": ["/x/"]}}', "/stories/1/0")):
        path.write_text(text)
        found, problems = read_history_file(path)
        assert found is None and [(p.path, p.pointer, p.code) for p in problems] == [
            (path.as_posix(), pointer, "url-history")]
    path.write_text(json.dumps({"version": 1, "stories": {"1": [A, B]}, "redirects": []}))
    assert read_history_file(path) == (UrlHistory({"1": (A, B)}), [])


RECORD = "0123456789abcdef fedcba9876543210 2"


def test_records_of_last_publishes_travel_with_the_history(tmp_path: Path) -> None:
    """Version 2 keeps each story's last publish; a version 1 file (none) still loads."""
    path = tmp_path / "desk-urls.json"
    recorded = UrlHistory({"1": (A, B), "2": (C,)}, {"1": RECORD, "2": "0" * 16 + " - 0"})
    config = load_config(REPO / "pyproject.toml")
    path.write_bytes(json.dumps(site_file(recorded, [], config)).encode())
    assert json.loads(path.read_bytes())["version"] == 2
    assert read_history_file(path) == (recorded, [])
    for bad, pointer in (({"1": "0123 x 2"}, "/published/1"), ({"2": 7}, "/published/2"),
                         (["1"], "/published"), ({"1": RECORD + "\n" + RECORD}, "/published/1")):
        path.write_text(json.dumps({"version": 2, "stories": {"1": [A]}, "published": bad}))
        found, problems = read_history_file(path)
        assert found is None and [p.pointer for p in problems] == [pointer], bad
    # Read back from the index and listed in the site's copy by id, in order, whatever
    # order a build made them in (the catalog's).
    made = UrlHistory(recorded.urls).published_as({"2": "0" * 16 + " - 0", "1": RECORD})
    assert list(made.published) == ["2", "1"]
    assert list(site_file(made, [], config)["published"]) == ["1", "2"]
    write_state(SavedState(history=made), tmp_path / "state.sqlite")
    read = read_state(tmp_path / "state.sqlite").history
    assert read == made and list(read.published) == ["1", "2"]
    # A move keeps the records; records that change nothing keep the very history.
    assert recorded.advance([("2", A)]).published == recorded.published
    assert recorded.published_as({"2": "0" * 16 + " - 0", "1": RECORD}) is recorded
    assert list(recorded.published_as({"3": RECORD, "1": RECORD}).published.items()) == [
        ("3", RECORD), ("1", RECORD)]


def test_the_saved_state_keeps_the_history(tmp_path: Path) -> None:
    state = SavedState(history=UrlHistory({"1": (A, B), "2": (C,)}))
    write_state(state, tmp_path / "state.sqlite")
    assert read_state(tmp_path / "state.sqlite").history == state.history
    write_state(SavedState(), tmp_path / "none.sqlite")
    assert read_state(tmp_path / "none.sqlite").history is None
    # An index never names a file outside the site, nor a path under two ids.
    for change in ("UPDATE url_history SET path = '/../../x/' WHERE id = '2'",
                   f"UPDATE url_history SET path = '{A}' WHERE id = '2'"):
        write_state(dataclasses.replace(state), tmp_path / "bad.sqlite")
        assert read_state(tmp_path / "bad.sqlite").history == state.history
        execute(tmp_path / "bad.sqlite", change)
        assert read_state(tmp_path / "bad.sqlite") == SavedState()
    # Written as a difference: the history read stays in the file as it is; another is
    # written.
    write_state(dataclasses.replace(state), tmp_path / "again.sqlite")
    read = read_state(tmp_path / "again.sqlite")
    write_state(read, tmp_path / "again.sqlite")
    assert read_state(tmp_path / "again.sqlite").history == state.history
    read.history = read.history.advance([("2", A)])  # type: ignore[union-attr]
    write_state(read, tmp_path / "again.sqlite")
    assert read_state(tmp_path / "again.sqlite").history == UrlHistory({"1": (B,), "2": (C, A)})


def test_where_a_build_starts_its_history(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    write_story(content, make_story(1))
    config = load_config(REPO / "pyproject.toml", {"content_dir": content, "output_dir": out,
                                                   "cache_dir": tmp_path / "cache",
                                                   "search": False})
    given = UrlHistory({"9": ("/stories/2026-11-01/given/",)})
    # Nothing remembered, no site: the given history (a copy of the last deploy's).
    assert BuildCache(history=given).recall_history(out) == (given, [])
    assert build(config, Clock(NOW)).ok
    cache = BuildCache.saved_for(config.cache_dir, out)
    built = UrlHistory({"10001": ("/stories/2026-11-14/story-number-1/",)})
    cache.history = given
    found = cache.recall_history(out)  # the saved state, which made the site
    assert found == (dataclasses.replace(built, published=found[0].published), [])
    assert list(found[0].published) == ["10001"]  # with the record of its publish
    # A state that describes another site (a --no-cache build came between): the site's.
    site_file = out / ".well-known/desk-urls.json"
    data = json.loads(site_file.read_text())
    data["stories"]["7"] = ["/stories/2026-11-02/seven/"]
    site_file.write_text(json.dumps(data))
    cache.state.site_id = "another"
    assert cache.recall_history(out)[0].urls["7"] == ("/stories/2026-11-02/seven/",)
    # The site's history unreadable: the build refuses, naming it, and changes nothing.
    site_file.write_text("{")
    report = build(config, Clock(NOW), cache=BuildCache())
    assert not report.ok and report.errors[0].path == site_file.as_posix()
    assert report.errors[0].code == "url-history"


@given(st.from_regex(r"/stories/[0-9²٣]{4}-[0-9]{2}-[0-9]{2}/[a-z0-9A\n-]{0,8}/?\n?",
                     fullmatch=True))
def test_the_quick_look_at_a_story_path_accepts_only_what_the_layout_does(path: str) -> None:
    """A history read back holds an archive's paths, most of them told at one match: the
    match never accepts a path the layout's own check refuses."""
    parts = path.split("/")
    try:
        valid = len(parts) == 5 and urls.story_path(parts[2], parts[3]) == path
    except ValueError:
        valid = False
    assert _is_story_path(path) == valid



_PATHISH = st.from_regex(r"/stories/[0-9]{4}-[0-9]{2}-[0-9]{2}/[a-z0-9A\n/-]{0,6}/?\n?",
                         fullmatch=True)


@given(st.lists(st.one_of(_PATHISH, st.sampled_from([A, B, C]), st.integers()), max_size=6))
def test_every_path_at_once_is_judged_as_one_at_a_time(paths: list[object]) -> None:
    """A history read back holds an archive's paths, judged by one match over them all:
    it accepts exactly the lists whose paths each pass the usual pattern, none twice
    (any other list is judged path by path, which names the first problem)."""
    usual = all(isinstance(p, str) and _USUAL_STORY_PATH.fullmatch(p) for p in paths)
    assert _usual_paths(paths) == (usual and len(set(map(str, paths))) == len(paths))
