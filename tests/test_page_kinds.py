"""What a page depends on is declared once: each kind of list of stories is one entry of
desk.render.since.LIST_KINDS, declared by the page kind that renders it
(desk.render.site.REGISTRY, PageKind.lists), and from it a change to a story touches the
pages of its groups (groups_of). A page kind that asks whether a group's pages stand,
of a kind of list it does not declare, or a kind of list no page kind declares, fails
here: its pages would otherwise keep stale keys, silently."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from storygen import REPO, make_story

from desk.build.pipeline import render_context
from desk.config import load_config
from desk.content.catalog import Clock, Content, build_catalog
from desk.content.loader import LoadedStory
from desk.content.models import Story
from desk.render.context import RenderContext, each_unit
from desk.render.since import LIST_KINDS, GroupName, groups_of
from desk.render.site import REGISTRY

NOW = datetime(2026, 11, 12, tzinfo=UTC)


def stories() -> tuple[LoadedStory, ...]:
    """Stories in three newsrooms, of two beats and two agents, over a few editions."""
    made = []
    for n in range(12):
        data = make_story(n, ("artificial-intelligence", "climate", "markets")[n % 3],
                          datetime(2026, 11, 10, 6, tzinfo=UTC) + timedelta(hours=n),
                          beat=("models", "chips")[n % 2],
                          writer={"agent": ("scout", "scribe")[n % 2], "run_id": f"run-{n}"})
        made.append(LoadedStory.of(f"content/stories/{n}.json", Story.model_validate(data),
                                   f"{n:064x}"))
    return tuple(made)


@dataclass(frozen=True)
class Asking(RenderContext):
    """A render context that notes the groups a page kind asks about."""

    asked: list[GroupName] = field(default_factory=list)

    def settled(self, name: GroupName, stories: Sequence[LoadedStory]
                ) -> Callable[[int], bool] | None:
        self.asked.append(name)
        return super().settled(name, stories)

    def unchanged(self, name: GroupName) -> bool:
        self.asked.append(name)
        return super().unchanged(name)

    def kept(self, name: Any, made_from: Any, make: Callable[[], Any],
             fresh: bool = False) -> Any:
        if isinstance(name, tuple) and len(name) == 2:
            self.asked.append(name)
        return super().kept(name, made_from, make, fresh)


def test_every_kind_of_list_is_declared_once_by_the_page_kind_that_renders_it() -> None:
    declared = [kind for page in REGISTRY for kind in page.lists]
    assert sorted(k.name for k in declared) == sorted(k.name for k in LIST_KINDS)
    assert len({page.name for page in REGISTRY}) == len(REGISTRY)


def test_a_page_kind_asks_only_about_the_groups_of_the_lists_it_declares(tmp_path: Path
                                                                         ) -> None:
    config = load_config(REPO / "pyproject.toml", {"page_size": 2, "search": False,
                                                   "cache_dir": tmp_path / "cache"})
    clock = Clock(NOW)
    made = stories()
    base = render_context(build_catalog(Content(made), config, clock), config, clock, None, ())
    groups = {name for item in made for name in groups_of(item.summary)}
    asked_of: dict[str, set[str]] = {}
    for page in REGISTRY:
        ctx = Asking(**{f: getattr(base, f) for f in base.__dataclass_fields__})
        for unit in each_unit(page.units(ctx)):
            assert unit.id
        kinds = {kind for kind, _ in ctx.asked if kind != "sitemap"}
        asked_of[page.name] = kinds
        assert kinds <= {k.name for k in page.lists}, (page.name, kinds)
        # Every group asked about is one a story's change touches (groups_of).
        assert {n for n in ctx.asked if n[0] != "sitemap"} <= groups, page.name
    # Not vacuous: each declared kind of list is asked about by its page kind.
    for page in REGISTRY:
        assert asked_of[page.name] == {k.name for k in page.lists}, page.name
