"""Names that become path segments of the site (slug, newsroom, beat, agent, a page's
folders, a media file's path): each at most 255 bytes, the longest name a file system
holds. `desk check` refuses a longer one before anything is written, and `desk build
--hold-back` holds back the story that has it and publishes the others."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import NOW
from storygen import REPO, make_story, write_story

from desk.cli import HELD_BACK, main
from desk.content.segments import check_segment

MAX_SEGMENT_BYTES = 255


def run(*args: str) -> Any:
    return CliRunner().invoke(main, [args[0], "--config", str(REPO / "pyproject.toml"),
                                     *args[1:]])


def named(field: str, value: str) -> dict[str, Any]:
    story = make_story(1)
    if field == "writer/agent":
        story["writer"] = {"agent": value}
    else:
        story[field] = value
    return story


FIELDS = ["slug", "newsroom", "beat", "writer/agent"]


@pytest.mark.parametrize("field", FIELDS)
def test_a_name_past_the_limit_is_refused_by_check_and_held_back_by_build(
        field: str, tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(2))
    story = write_story(content, named(field, "a" * 296), "long.json")
    checked = run("check", "--content", str(content))
    assert checked.exit_code == 1
    assert re.search(rf"{re.escape(str(story))}: /{field}: \[invalid-(segment|value)\] is 296 "
                     "characters long; a path segment is at most 255", checked.output), (
        checked.output)
    out = tmp_path / "public"
    plain = run("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert plain.exit_code == 1 and "File name too long" not in plain.output
    assert plain.exception is None or isinstance(plain.exception, SystemExit)
    assert not out.exists()
    held = run("build", "--content", str(content), "--out", str(out), "--now", NOW,
               "--hold-back")
    assert held.exit_code == HELD_BACK, held.output
    assert f"Held back {story}" in held.output
    assert (out / "stories/2026-11-14/story-number-2/index.html").is_file()


@pytest.mark.parametrize("field", FIELDS)
def test_a_name_at_the_limit_is_published(field: str, tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, named(field, "a" * MAX_SEGMENT_BYTES), "long.json")
    out = tmp_path / "public"
    assert run("check", "--content", str(content)).exit_code == 0
    built = run("build", "--content", str(content), "--out", str(out), "--now", NOW)
    assert built.exit_code == 0, built.output
    assert any(len(part) == MAX_SEGMENT_BYTES for path in out.rglob("index.html")
               for part in path.relative_to(out).parts)


def test_every_segment_rule_states_the_limit() -> None:
    assert check_segment("a" * 255) == "a" * 255
    with pytest.raises(ValueError, match="is 256 characters long; a path segment is at most"):
        check_segment("a" * 256)
    from desk import urls
    with pytest.raises(ValueError, match="at most 255"):
        urls.page_path(("policies", "b" * 256))
