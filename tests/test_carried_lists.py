"""A build from the saved state carries the list pages of untouched groups over without
making their inputs, and still equals a build from nothing, byte for byte, whichever way
a story joins or leaves a newsroom, an edition, a beat or an agent."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import tree
from storygen import REPO, make_story, write_story, write_withdrawal

import desk.render.members
import desk.render.pages
import desk.render.site
from desk import urls
from desk.build.cache import BuildCache
from desk.build.pipeline import build
from desk.config import Config, load_config
from desk.content.catalog import Clock, Group
from desk.content.history import read_history_file
from desk.content.loader import LoadedStory
from desk.render.sitemaps import SitemapPart

NOW = datetime(2026, 11, 12, tzinfo=UTC)
START = datetime(2026, 10, 31, 6, tzinfo=UTC)  # the stories of two months
NEWSROOMS = ("artificial-intelligence", "climate", "markets")
COUNT = 24


def story(n: int, hours: int | None = None, **overrides: Any) -> dict[str, Any]:
    """Story n: two stories an edition, an edition each two hours; three newsrooms, two
    beats, two agents."""
    when = START + timedelta(hours=n // 2 * 2 if hours is None else hours, minutes=n)
    fields: dict[str, Any] = {
        "beat": ("models", "chips")[n % 2],
        "writer": {"agent": ("scout", "scribe")[n % 2], "run_id": f"run-{n}"},
        "newsroom_title": "", **overrides}
    return make_story(n, fields.pop("newsroom", NEWSROOMS[n % 3]), when, **fields)


def config_of(tmp_path: Path, out: str, cache: str = "cache") -> Config:
    return load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / cache, "search": False, "content_dir": tmp_path / "content",
        "output_dir": tmp_path / out, "page_size": 3, "sitemap_max_urls": 10})


def fresh(tmp_path: Path, now: datetime = NOW) -> dict[str, bytes]:
    """A build from nothing but the content and the URL history of the site built."""
    config = config_of(tmp_path, "fresh", "fresh-cache")
    history, _ = read_history_file(tmp_path / "public/.well-known/desk-urls.json")
    assert build(config, Clock(now), cache=BuildCache(history=history)).ok
    return tree(config.output_dir)


@pytest.fixture
def site(tmp_path: Path) -> Config:
    """A site of COUNT stories, built once with its state saved."""
    for n in range(COUNT):
        write_story(tmp_path / "content", story(n))
    config = config_of(tmp_path, "public")
    assert build(config, Clock(NOW)).ok
    return config


def file_of(config: Config, n: int) -> Path:
    return next(config.content_dir.rglob(f"story-number-{n}.json"))


def rewrite(config: Config, n: int, data: dict[str, Any]) -> None:
    file_of(config, n).unlink()
    write_story(config.content_dir, data)


def edit_headline(config: Config) -> None:
    rewrite(config, 9, story(9, headline="A new headline"))


def move_to_another_edition(config: Config) -> None:
    rewrite(config, 9, story(9, hours=20))


def move_to_another_group(config: Config) -> None:
    rewrite(config, 9, story(9, newsroom="climate", beat="policy",
                             writer={"agent": "critic", "run_id": "run-9"}))


def empty_an_edition(config: Config) -> None:
    """Stories 8 and 9's edition is left with none: those on either side link each other."""
    file_of(config, 8).unlink()
    file_of(config, 9).unlink()


def add_an_edition_between(config: Config) -> None:
    write_story(config.content_dir, story(40, hours=9))  # between 14:00 and 16:00


def withdraw_an_unchanged_story(config: Config) -> None:
    write_withdrawal(config.content_dir, str(10_000 + 9))


def add_a_new_story(config: Config) -> None:
    write_story(config.content_dir, story(41, hours=30))


def add_a_backdated_story(config: Config) -> None:
    """A story among the oldest: every archive page of its groups holds another story."""
    write_story(config.content_dir, story(42, hours=1))


def delete_an_old_story(config: Config) -> None:
    file_of(config, 1).unlink()


def edit_old_stories(config: Config) -> None:
    """Stories changed where they stand, one of them moved within its newsroom's list."""
    rewrite(config, 1, story(1, headline="A new headline"))
    rewrite(config, 4, story(4, hours=3))


def add_many_new_stories(config: Config) -> None:
    """Archive pages added beside the last ones, whose links change."""
    for n in range(43, 55):
        write_story(config.content_dir, story(n, hours=30 + n))


def delete_the_newest_stories(config: Config) -> None:
    """Archive pages gone: the last of the others links the latest page again."""
    for n in range(16, COUNT):
        file_of(config, n).unlink()


CHANGES: dict[str, Callable[[Config], None]] = {
    "headline": edit_headline,
    "edition": move_to_another_edition,
    "group": move_to_another_group,
    "emptied edition": empty_an_edition,
    "edition between": add_an_edition_between,
    "withdrawal": withdraw_an_unchanged_story,
    "new story": add_a_new_story,
    "backdated story": add_a_backdated_story,
    "old story deleted": delete_an_old_story,
    "old stories edited": edit_old_stories,
    "many new stories": add_many_new_stories,
    "newest stories deleted": delete_the_newest_stories,
}


@pytest.mark.parametrize("change", CHANGES)
def test_each_way_a_group_changes_matches_a_build_from_nothing(site: Config, tmp_path: Path,
                                                               change: str) -> None:
    CHANGES[change](site)
    again = build(site, Clock(NOW))
    assert again.ok and again.reused > COUNT
    assert tree(site.output_dir) == fresh(tmp_path)


def test_an_earlier_clock_unpublishes_unchanged_stories_everywhere(site: Config,
                                                                   tmp_path: Path) -> None:
    # The stories of the last six hours go back to being held, their files untouched.
    earlier = START + timedelta(hours=6)
    assert build(site, Clock(earlier)).ok
    assert tree(site.output_dir) == fresh(tmp_path, earlier)


def inputs_made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The list pages whose inputs a build makes, from now on, by path."""
    made: list[str] = []
    members_inputs = desk.render.pages.members_inputs

    def counted(ctx: Any, path: str, *rest: Any) -> tuple[str, ...]:
        made.append(path)
        return members_inputs(ctx, path, *rest)

    monkeypatch.setattr(desk.render.pages, "members_inputs", counted)
    monkeypatch.setattr(desk.render.members, "members_inputs", counted)
    return made


def test_untouched_groups_carry_their_pages_without_making_inputs(
        site: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = inputs_made(monkeypatch)
    parts: list[str] = []
    sitemap_part = desk.render.site._sitemap_part

    def part_counted(ctx: Any, path: str, *rest: Any) -> Any:
        parts.append(path)
        return sitemap_part(ctx, path, *rest)

    monkeypatch.setattr(desk.render.site, "_sitemap_part", part_counted)
    assert build(site, Clock(NOW)).ok
    assert made == [] and parts == []  # nothing changed: every list page carried
    edit_headline(site)
    assert build(site, Clock(NOW)).ok
    # Story 9's edition and the two around it, its newsroom's, beat's and agent's pages:
    # not the other newsrooms', beats', agents' or editions'.
    editions = {"/editions/2026-10-31T12/", "/editions/2026-10-31T14/",
                "/editions/2026-10-31T16/"}
    assert editions <= set(made)
    others = [path for path in made if path not in editions
              and not path.startswith(("/n/artificial-intelligence/", "/agents/scribe/"))]
    assert others == []
    assert any(path.startswith("/n/artificial-intelligence/beats/chips/") for path in made)
    assert any(path.startswith("/agents/scribe/") for path in made)
    assert not any(path.startswith("/n/artificial-intelligence/beats/models/") for path in made)
    assert parts == []  # no page of the sitemap has a new last modification
    assert tree(site.output_dir) == fresh(tmp_path)
    # A story of November: November's parts of the sitemap and the other pages' change;
    # October's are carried over, their lines not even made.
    lines_of: list[str] = []
    part_lines = desk.render.site._part_lines

    def lines_counted(ctx: Any, part: SitemapPart, name: str) -> tuple[str, ...]:
        lines_of.append(part.head)
        return part_lines(ctx, part, name)

    monkeypatch.setattr(desk.render.site, "_part_lines", lines_counted)
    # Nor are the pages of a month's stories or editions made (PartPages).
    pages_of: list[str] = []
    story_pages, edition_entries = desk.render.site._story_pages, desk.render.pages._edition_entries

    def stories_counted(stories: list[LoadedStory]) -> list[tuple[str, datetime]]:
        pages_of.append(stories[0].url_path)
        return story_pages(stories)

    def editions_counted(editions: list[Group]) -> list[tuple[str, datetime]]:
        pages_of.append(urls.edition_path(editions[0].key))
        return edition_entries(editions)

    monkeypatch.setattr(desk.render.site, "_story_pages", stories_counted)
    monkeypatch.setattr(desk.render.pages, "_edition_entries", editions_counted)
    parts.clear()  # the build from nothing rendered every part
    add_a_new_story(site)
    assert build(site, Clock(NOW)).ok
    assert set(parts) == {"/sitemap-stories-2026-11.xml", "/sitemap-editions-2026-11.xml",
                          *(p for p in parts if p.startswith("/sitemap-pages"))}
    assert lines_of and not any("/2026-10-" in path for path in lines_of)
    # October's editions, within the limit, are not made; its stories, past it, are made
    # to be cut in pieces (sitemap-stories-2026-10-1.xml, -2.xml).
    assert set(map(urls.sitemap_part_of, pages_of)) == {
        "stories-2026-11", "editions-2026-11", "stories-2026-10"}
    assert tree(site.output_dir) == fresh(tmp_path)


def test_a_touched_list_makes_the_inputs_of_its_newest_pages_only(
        site: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = inputs_made(monkeypatch)
    add_a_new_story(site)  # story 41, the newest: the agent scribe's thirteenth
    assert build(site, Clock(NOW)).ok
    # Its twelve stories filled three archive pages and the latest: the two oldest
    # pages are carried; the third is made again, as a page may have come after it.
    assert sorted(p for p in made if p.startswith("/agents/scribe/")) == [
        "/agents/scribe/", "/agents/scribe/page/3/"]
    # The markets newsroom's one archive page now has a newer one beside it.
    assert "/n/markets/page/1/" in made
    assert tree(site.output_dir) == fresh(tmp_path)
    made.clear()
    rewrite(site, 1, story(1, headline="A new headline"))  # scribe's oldest, in place
    assert build(site, Clock(NOW)).ok
    assert sorted(p for p in made if p.startswith("/agents/scribe/")) == [
        "/agents/scribe/", "/agents/scribe/page/1/"]
    assert tree(site.output_dir) == fresh(tmp_path)


def test_a_refused_build_leaves_the_next_one_on_the_same_cache_correct(site: Config,
                                                                      tmp_path: Path) -> None:
    # The refused build brings the cache's inspections up to date, not its units: the
    # next build can no longer tell from them which stories changed since the units'.
    cache = BuildCache.saved_for(site.cache_dir, site.output_dir)
    move_to_another_edition(site)
    broken = site.content_dir / "stories" / "broken.json"
    broken.write_text("{", encoding="utf-8")
    assert not build(site, Clock(NOW), cache=cache).ok
    broken.unlink()
    assert build(site, Clock(NOW), cache=cache).ok
    assert tree(site.output_dir) == fresh(tmp_path)
