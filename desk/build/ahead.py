"""A saved story's own pages ahead of the build: what desk serve shows moments after a
save, while the build that follows brings the pages around the story up to date.

Enters: the story files a save changed and the render context of the last build (kept by
the session). Leaves: each story's three files, rendered by the renderer the build uses
(desk.render.story) with that context, or nothing when the save changed what the
story's page takes from the other stories (its place, its newsroom's title, its related
links, its images), made a file invalid, or touched more than a few files: then the build
alone runs. A story new to the site is shown ahead too when it takes nothing from
the others that it would not take once built (see new_in_place). The build that
follows renders the same bytes (it is the judge: a file it
renders otherwise is replaced and its page reloaded).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from pathlib import Path

from desk.build.inspection import inspect_file
from desk.content.findings import Finding
from desk.content.loader import DRAFTS, STORIES, LoadedStory, ParsedStory, Summary
from desk.content.models import is_local
from desk.render import Output
from desk.render.context import RenderContext
from desk.render.story import Wanted, render_story_unit

# More files than this in one save (a checkout, a script): the build alone.
AHEAD_MAX = 8
_NOTHING = Wanted(frozenset(), frozenset())


@dataclass(frozen=True)
class Ahead:
    """The saved stories' files, their pages' URL paths and each page's warnings."""

    outputs: tuple[Output, ...]
    pages: tuple[str, ...]
    warnings: dict[str, tuple[Finding, ...]]


def pages_ahead(paths: Collection[str], ctx: RenderContext | None) -> Ahead | None:
    """The files of the saved stories' own pages (`paths`: the changed files, as the
    content walk names them), or None when they cannot be rendered ahead of the build
    (see the module's docstring). A file gone that was no story (an editor's temporary
    file) is no reason not to."""
    if ctx is None or not paths or len(paths) > AHEAD_MAX:
        return None
    outputs: list[Output] = []
    warnings: dict[str, tuple[Finding, ...]] = {}
    ids: set[str] = set()
    for path in sorted(paths):
        if not Path(path).is_file():
            if story_of(ctx, path) is not None:
                return None  # a story deleted: lists change, its page goes
            continue
        found = _rendered(path, ctx)
        if found is None:
            return None
        files, item, findings = found
        if item.url_path in warnings or item.summary.id in ids:
            return None  # two saved files claim one URL or id: the build says which
        outputs += files
        warnings[item.url_path] = findings
        ids.add(item.summary.id)
    if not outputs:
        return None
    return Ahead(tuple(outputs), tuple(warnings), warnings)


def _rendered(path: str, ctx: RenderContext
              ) -> tuple[list[Output], LoadedStory, tuple[Finding, ...]] | None:
    """One saved story's files, the story and its file's warnings (None: not to be
    rendered ahead)."""
    if Path(path).suffix != ".json":
        return None
    parsed: dict[str, ParsedStory] = {}
    item, findings = inspect_file(path, ctx.config, parsed)
    if item is None or any(f.is_error for f in findings):
        return None
    old = ctx.catalog.by_path.get(item.url_path)
    if old is None:
        if not new_in_place(path, item, ctx):
            return None
        draft = story_folder(path, ctx.config.content_dir) == DRAFTS
    elif old.path != path or not same_place(old.summary, item.summary):
        return None
    else:
        draft = old.draft
    try:
        files, _ = render_story_unit(replace(item, draft=draft), "",
                                     replace(ctx, parsed=parsed), _NOTHING)
    except Exception:  # noqa: BLE001 - whatever it is, the build reports it
        return None
    return files, item, findings


def same_place(old: Summary, new: Summary) -> bool:
    """Whether a story's page takes the same things from the other stories after the
    save as before: its id, its place in the lists (time, newsroom, edition), its
    newsroom's title, its related links and its images (see story_page_inputs)."""
    return ((old.id, old.newsroom, old.newsroom_title, old.edition, old.published_at,
             old.url, old.related, old.images)
            == (new.id, new.newsroom, new.newsroom_title, new.edition, new.published_at,
                new.url, new.related, new.images))


def new_in_place(path: str, item: LoadedStory, ctx: RenderContext) -> bool:
    """Whether a story new to the site (`path`: its file, one a build reads) takes from
    the other stories only what it would take once built in a preview, which shows
    drafts: it is out by the clock; its id is no other story's and was never published
    nor withdrawn, and its URL is no other story's, no redirect's or notice's (no page
    to move, give notice of or take over); its newsroom is there already under the
    title it would keep; it names no related story and no image file (whose files a
    build probes)."""
    summary, catalog = item.summary, ctx.catalog
    group = catalog.newsroom_index.get(summary.newsroom)
    if (story_folder(path, ctx.config.content_dir) is None or group is None or summary.related_urls
            or any(map(is_local, summary.images))
            or summary.published_at > ctx.now
            or summary.newsroom_title not in ("", group.title)
            or summary.id in catalog.history.urls or item.url_path in catalog.moved
            # A withdrawn story never published has no URL the catalog knows of.
            or any(summary.id == n.id or n.path in (None, item.url_path)
                   for n in catalog.notices)):
        return False
    # A file moved or renamed is no new story: its old file's story is the one to move.
    return all(s.summary.id != summary.id and s.path != path and s.url_path != item.url_path
               for s in (*catalog.published, *catalog.held))


def story_folder(path: str, content: Path) -> str | None:
    """The folder of the content (stories/ or drafts/) a build reads a file from as a
    story or a draft: a .json file below it, no part of its name hidden (see
    desk.content.loader.content_files); None for a file no build reads so."""
    try:
        parts = Path(path).relative_to(content).parts
    except ValueError:
        return None
    if (len(parts) > 1 and parts[0] in (STORIES, DRAFTS) and parts[-1].endswith(".json")
            and not any(part.startswith(".") for part in parts)):
        return parts[0]
    return None


def story_of(ctx: RenderContext, path: str) -> LoadedStory | None:
    """The published story of a file in the last build, if any."""
    return next((s for s in ctx.catalog.published if s.path == path), None)
