"""Every kind of bad input: one exact error line, exit 1, and the old site untouched."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import make_story, write_story

SEGMENT_RULE = "use lowercase letters, digits and single hyphens (pattern ^[a-z0-9]+(-[a-z0-9]+)*$)"


def _truncated(content: Path) -> tuple[Path, str]:
    path = content / "stories" / "truncated.json"
    path.write_text('{\n  "schema": "hangingcontext.desk/1",\n  "type": "st', encoding="utf-8")
    return path, f"{path}:3:11: invalid JSON: Unterminated string starting at"


def _story_with(**changes: object) -> Callable[[Path], tuple[Path, str]]:
    def make(content: Path) -> tuple[Path, str]:
        data = make_story(7)
        for key, value in changes.items():
            if value is None:
                data.pop(key)
            else:
                data[key] = value
        return write_story(content, data, "bad.json"), ""
    return make


CASES: dict[str, tuple[Callable[[Path], tuple[Path, str]], str]] = {
    "truncated-json": (_truncated, ""),
    "wrong-schema": (_story_with(schema="hangingcontext.desk/2"),
                     "/schema: must be 'hangingcontext.desk/1', got \"hangingcontext.desk/2\""),
    "missing-headline": (_story_with(headline=None), "/headline: field required"),
    "key-facts-string": (_story_with(key_facts="not a list"),
                         "/key_facts: expected an array, got a string"),
    "slug-with-slash": (_story_with(slug="a/b"),
                        f"/slug: 'a/b' is not a valid path segment: {SEGMENT_RULE}"),
    "slug-dotdot": (_story_with(slug=".."),
                    f"/slug: '..' is not a valid path segment: {SEGMENT_RULE}"),
    "newsroom-dotdot": (_story_with(newsroom="../../etc"),
                        f"/newsroom: '../../etc' is not a valid path segment: {SEGMENT_RULE}"),
    "datetime-without-offset": (_story_with(published_at="2026-11-14T12:05:00"),
                                "/published_at: datetime has no UTC offset: add Z or +HH:MM"),
    "id-as-number": (_story_with(id=1584), "/id: expected a string, got a number"),
    "missing-paragraph-markdown": (
        _story_with(sections=[{"heading": "h", "paragraphs": [{"cites": []}]}]),
        "/sections/0/paragraphs/0/markdown: field required"),
    "javascript-url": (_story_with(related=[{"url": "javascript:alert(1)", "headline": "x"}]),
                       "/related/0/url: must be an absolute http(s) URL"),
}


@pytest.fixture
def previous_site(desk, content: Path, tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A good build in tmp_path/public, and its files."""
    write_story(content, make_story(1))
    out = tmp_path / "public"
    assert desk("build", "--content", str(content), "--out", str(out), "--now", NOW).exit_code == 0
    return out, tree(out)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_clear_line_and_loses_nothing(
    case: str, desk, content: Path, tmp_path: Path, previous_site: tuple[Path, dict[str, bytes]]
) -> None:
    out, before = previous_site
    make, suffix = CASES[case]
    path, line = make(content)
    expected = line or f"{path}: {suffix}"
    siblings = sorted(p.name for p in tmp_path.iterdir())

    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)

    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(expected) if case == "truncated-json" else lines[0] == expected
    assert "Traceback" not in result.stderr + result.stdout
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings


def test_all_errors_of_all_files_are_reported_at_once(desk, content: Path,
                                                      tmp_path: Path) -> None:
    write_story(content, {**make_story(1), "slug": "Bad Slug"}, "one.json")
    data = make_story(2)
    data.pop("headline")
    data["published_at"] = "yesterday"
    write_story(content, data, "two.json")
    result = desk("build", "--content", str(content), "--out", str(tmp_path / "o"), "--now", NOW)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if ": /" in line]
    assert len(errors) == 3
    assert not (tmp_path / "o").exists()


def test_two_stories_at_one_url_name_both_files(desk, content: Path, tmp_path: Path,
                                                previous_site: tuple[Path, dict[str, bytes]]) -> None:
    out, before = previous_site
    first = write_story(content, make_story(3), "a.json")
    second = write_story(content, {**make_story(3), "id": "other"}, "b.json")
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"{second}: /slug: /stories/2026-11-14/story-number-3/ is also the URL of {first}")
    assert tree(out) == before


def test_symlink_out_of_content_is_an_error(desk, content: Path, tmp_path: Path,
                                            previous_site: tuple[Path, dict[str, bytes]]) -> None:
    out, before = previous_site
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(make_story(4)))
    link = content / "stories" / "link.json"
    os.symlink(secret, link)
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == f"{link}: symlink resolves outside the content folder"
    assert tree(out) == before


def test_stray_and_hidden_files_are_ignored(desk, content: Path, tmp_path: Path) -> None:
    write_story(content, make_story(5))
    (content / "stories" / "notes.txt").write_text("not a story")
    (content / "stories" / ".story.json.swp").write_text("{garbage")
    hidden = content / "stories" / ".drafts"
    hidden.mkdir()
    (hidden / "draft.json").write_text("{garbage")
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert (out / "stories/2026-11-14/story-number-5/index.html").is_file()


def test_empty_content_builds_an_empty_site(desk, content: Path, tmp_path: Path) -> None:
    out = tmp_path / "public"
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 0, result.stderr
    assert "Built 0 stories" in result.stdout
    assert "No stories are published yet." in (out / "index.html").read_text()
    assert not (out / "stories").exists()


def test_output_folder_not_made_by_desk_is_never_replaced(desk, content: Path,
                                                          tmp_path: Path) -> None:
    write_story(content, make_story(6))
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    result = desk("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert result.exit_code == 1
    assert "no .desk-site marker" in result.stderr
    assert tree(out) == {"precious.txt": b"keep me"}


def test_usage_errors_exit_2(desk, content: Path) -> None:
    result = desk("build", "--content", str(content), "--now", "2026-11-15T00:00:00")
    assert result.exit_code == 2
    assert "has no UTC offset" in result.stderr
    assert desk("build", "--base-url", "ftp://x").exit_code == 2
