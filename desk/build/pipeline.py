"""`desk build`: inspect → catalog → render → write → search → swap, top to bottom.

`desk serve` runs the same first half (prepare: inspect → catalog → render context and
unit keys) and renders each file a browser asks for with the same renderers; there is
no second path. Walking one story through:

1. desk.build.inspection loads its file (desk.content.loader) and checks it
   (desk.content.checks) into a LoadedStory (a small summary), unless the cache knows the
   file unchanged;
2. desk.content.catalog places it among the published, held, draft or withdrawn stories,
   by newsroom and edition, with the URL history (desk.content.history) of moved stories
   (with --hold-back, desk.build.holdback first holds back a story whose file fails its
   checks, its last published version standing in for it);
3. its key (desk.build.keys) is compared with the one its files were built under
   (desk.build.ledger); when they differ, desk.render.story renders its three files, here
   or in a forked worker (desk.build.parallel), and the writer (desk.build.writer, chosen
   by desk.build.target) stages them;
4. the pages around the stories (desk.render.site's registry) follow the same way;
5. its page is indexed for search with the other new and edited ones (desk.search.index, in
   bundles laid out by desk.search.bundles), by Pagefind in its own process while step 4
   runs;
6. the staged site is swapped in whole and the cache (desk.build.cache) saved for next time.
"""

from __future__ import annotations

import time
from collections import ChainMap
from collections.abc import (
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
    Set,
)
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import cast

from jinja2 import Environment, TemplateError

from desk import urls
from desk.build.cache import BuildCache, InspectionCache, Session
from desk.build.heap import collector_paused
from desk.build.holdback import HeldStory, HoldBack, StandIn, hold_back, live_site, site_folder
from desk.build.inspection import Inspection, inspect_content
from desk.build.keys import KeyMaker, check_key, code_fingerprint, site_key
from desk.build.ledger import Ledger
from desk.build.parallel import (
    Describe,
    RenderFailed,
    RenderUnit,
    collect,
    fork_safe,
    start_unit_workers,
    start_workers,
    stop_workers,
)
from desk.build.state import UnitChanges, search_copies
from desk.build.target import ChangesOnly, RecycledSpare, Target, open_writer
from desk.build.writer import LastSiteIncomplete, SiteWriter, WriteError
from desk.config import Config
from desk.content.catalog import Catalog, Clock, Content, Group, Notice, build_catalog
from desk.content.digests import digest
from desk.content.edits import publish_records
from desk.content.findings import Finding, sort_findings
from desk.content.gitblobs import clean_blobs
from desk.content.history import Redirect, UrlHistory
from desk.content.loader import ContentChanged, LoadedStory, ParsedStory
from desk.content.media import BrokenImage, MediaProbe, is_local, local_refs, probe_media
from desk.content.prose import Prose
from desk.render import Output
from desk.render.assets import Asset, collect_assets
from desk.render.compiled import COMPILED_TEMPLATES, CompiledTemplates
from desk.render.context import CarriedUnits, RenderContext, StoryResults, Unit, Units
from desk.render.feeds import Entry, feed_members, story_entry
from desk.render.since import since_last
from desk.render.site import site_units
from desk.render.story import RenderedStory, Wanted, render_story_unit
from desk.render.templates import make_environment, site_context, template_finding
from desk.render.view import story_page_inputs
from desk.search.index import Indexed, Indexing, Pages, start_search

Progress = Callable[[int, int], None]

# Below this many stories per process, forking costs more than it saves.
PARALLEL_MIN_STORIES = 50
# The same for the pages around the stories: a build that changed a few stories renders
# a few dozen, one that renders everything (10,000 stories) a few thousand.
PARALLEL_MIN_UNITS = 200


@dataclass(frozen=True)
class BuildReport:
    """What a build did, or why it refused to."""

    ok: bool
    findings: tuple[Finding, ...]
    published: tuple[LoadedStory, ...] = ()
    held: tuple[LoadedStory, ...] = ()
    files: int = 0
    bytes: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    out_dir: Path | None = None
    reused: int = 0
    skipped: tuple[LoadedStory, ...] = ()  # drafts not written
    redirects: tuple[Redirect, ...] = ()  # old URLs of moved stories
    withdrawn: tuple[Notice, ...] = ()  # withdrawals applied
    whole: bool = True  # False: the output folder holds only the changes (--changes-only)
    held_back: tuple[HeldStory, ...] = ()  # story files that failed their checks
    # The published stories by newsroom and by edition, as the catalog grouped them.
    newsrooms: tuple[Group, ...] = ()
    editions: tuple[Group, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        """Findings that stopped the build."""
        return tuple(f for f in self.findings if f.is_error)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        """Findings that did not stop the build."""
        return tuple(f for f in self.findings if not f.is_error)

    @property
    def seconds(self) -> float:
        """Total wall time of the build."""
        return sum(self.timings.values())

    @property
    def next_due(self) -> datetime | None:
        """When the earliest held story is due."""
        return min((s.summary.published_at for s in self.held), default=None)


class Timer:
    """Wall time per stage."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._clock = time.perf_counter()

    def lap(self, stage: str) -> None:
        """Close a stage."""
        current = time.perf_counter()
        self.timings[stage] = current - self._clock
        self._clock = current


def build(
    config: Config,
    clock: Clock,
    target: Target | None = None,
    cache: BuildCache | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> BuildReport:
    """Build the site into the target, or refuse on errors.

    `target` says where files go (default: RecycledSpare of the output folder); `cache`
    what the last build left (default: the state saved for that folder; pass
    `BuildCache()` to build from nothing and save nothing). `jobs` is how many processes
    may render stories (forked; not for callers with threads). `progress(done, total)` is
    told how rendering goes, story by story.
    """
    target = target or RecycledSpare(config.output_dir)
    cache = cache or BuildCache.saved_for(config.cache_dir, target.out_dir)
    # Reading the state is a stage too: at 100,000 stories a quarter of an hourly build.
    read = {"state": cache.read_seconds} if cache.read_seconds is not None else {}
    cache.read_seconds = None  # told once: desk serve builds from it again and again
    jobs = jobs if fork_safe() else 1  # workers are forked: only where that is safe
    workers = Workers(jobs, progress)
    with collector_paused():
        try:
            report = _build(config, clock, target, cache, workers)
        except LastSiteIncomplete:
            # The site the saved state describes is not all there: keep nothing of it.
            cache.state.disown()
            report = _build(config, clock, target, cache, workers)
    return replace(report, timings={**read, **report.timings})


@dataclass(frozen=True)
class Prepared:
    """The first half of a build (prepare): what it publishes, the render context every
    renderer reads and the unit keys. `desk build` renders from it, `desk serve` renders
    from it only the files a browser asks for."""

    catalog: Catalog
    ctx: RenderContext  # with the stories parsed on the way
    keys: KeyMaker
    assets: tuple[Asset, ...]
    findings: tuple[Finding, ...]  # the warnings
    sorted_out: HoldBack
    # The last versions of the stories whose files changed or went (None: not known).
    replaced: tuple[LoadedStory, ...] | None


def prepare(config: Config, clock: Clock, cache: BuildCache, site: Path | ChangesOnly,
            jobs: int = 1, timer: Timer | None = None) -> Prepared | BuildReport:
    """inspect → hold back → catalog → render context and unit keys, incremental through
    the saved index (`site`: the output folder, or the changes-only target whose live
    site held stories stand in from); the report of a refused build when it cannot go
    on. Nothing is written."""
    timer = timer or Timer()
    sorted_out, parsed, found, history, (replaced, texts) = _published(
        config, clock, site, cache, jobs)
    timer.lap("load")
    if sorted_out is None:
        return BuildReport(False, tuple(found), timings=timer.timings)
    held = sorted_out.held
    if any(f.is_error for f in found):
        return BuildReport(False, _with_held(found, held), timings=timer.timings)
    catalog, problems = _catalog(sorted_out.content, config, clock, history, cache,
                                 (texts, parsed))
    timer.lap("catalog")
    findings = [*problems, *found]
    if any(p.is_error for p in problems):  # an image file that cannot be published
        return BuildReport(False, _with_held(findings, held), timings=timer.timings)
    assets = collect_assets(config.static_dir)
    try:
        ctx, keys = _prepared(render_context(catalog, config, clock, cache.session, assets,
                                             cache.file and cache.file.parent),
                              assets, cache.state.entries, parsed)
    except Exception as exc:
        failure = describe_failure(exc, config.templates_dir)
        if failure is None:
            raise
        return BuildReport(False, _with_held([failure, *findings], held),
                           timings=timer.timings)
    return Prepared(catalog, ctx, keys, assets, tuple(findings), sorted_out, replaced)


def _build(config: Config, clock: Clock, target: Target, cache: BuildCache,
           workers: Workers) -> BuildReport:
    timer = Timer()
    prepared = prepare(config, clock, cache,
                       target if isinstance(target, ChangesOnly) else target.out_dir,
                       workers.jobs, timer)
    if isinstance(prepared, BuildReport):
        return prepared
    return _render_and_write(prepared, target, cache, workers, timer)


def _render_and_write(prepared: Prepared, target: Target, cache: BuildCache,
                      workers: Workers, timer: Timer) -> BuildReport:
    """The second half of a build: every stale unit rendered and written, the search
    index, the swap, the index saved."""
    catalog, config, held = prepared.catalog, prepared.ctx.config, prepared.sorted_out.held
    findings = list(prepared.findings)
    try:
        writer = open_writer(target, cache.state.spare, cache.state.site())
    except (WriteError, OSError) as exc:
        out = target.out_dir
        findings.insert(0, Finding(str(out), "", "output", str(exc).removeprefix(f"{out}: ")))
        return BuildReport(False, _with_held(findings, held), timings=timer.timings)
    ledger = Ledger(cache.state.units_of(writer.previous_id), writer,
                    cache.state.parts_of(writer.previous_id))
    try:
        left = _left(prepared.replaced, prepared.sorted_out.content, catalog, ledger)
        plan = Plan(prepared.keys, ledger, writer, prepared.sorted_out.stand_ins, left,
                    _settled(cache, catalog, ledger, left, config,
                             _keyed_under(prepared.keys, catalog)))
        indexed, rendered = _render_and_index(prepared.ctx, plan, prepared.assets,
                                             (cache, workers), timer)
        findings += indexed.findings
        changes = ledger.changes()  # for the site id and the state's difference alike
        site_id, parts = ledger.site_id(changes)
        writer.swap_in(site_id)
        timer.lap("write")
    except BaseException as exc:
        writer.discard()
        if isinstance(exc, LastSiteIncomplete) and ledger.reused:
            raise
        failure = build_failure(exc, config, target.out_dir)
        if failure is None:
            raise
        if isinstance(exc, WriteError | OSError):
            cache.forget()  # the next build starts afresh
        return BuildReport(False, _with_held([failure, *findings], held),
                           timings=timer.timings)
    _remember(cache, plan, (rendered, indexed), (site_id, parts), changes)
    timer.lap("save")
    return BuildReport(ok=True, findings=tuple(findings), published=catalog.published,
                       held=catalog.held, files=writer.files, bytes=writer.bytes,
                       timings=timer.timings, out_dir=target.out_dir, reused=ledger.reused,
                       skipped=catalog.skipped, redirects=catalog.redirects,
                       withdrawn=catalog.notices, whole=not isinstance(target, ChangesOnly),
                       held_back=held, newsrooms=catalog.newsrooms, editions=catalog.editions)


def _remember(cache: BuildCache, plan: Plan,
              built: tuple[RenderContext, Indexed],
              site: tuple[str, dict[str, str] | None], changes: UnitChanges) -> None:
    """Save what the next build starts from: the site built (`site`: its id and its
    units' parts' digests, when made; `changes`: what it did to the last build's units),
    its URL history, search bundles, feed entries, what its keys were made under and
    which stories were held."""
    state, writer, ledger = cache.state, plan.writer, plan.ledger
    ctx, indexed = built
    catalog = ctx.catalog
    state.entries = ctx.stories.entries  # type: ignore[assignment]  # Entry values only
    state.entry_keys = kept_entries(ctx)
    state.advance(writer.previous_id, ledger.units, writer.loose_files(ledger.rendered_files),
                  *site, changes)
    state.history = catalog.history
    state.search = indexed.sealed
    state.keyed_under = _keyed_under(plan.keys, catalog)
    state.held = tuple(sorted(plan.stand_ins))
    cache.save()


def _keyed_under(keys: KeyMaker, catalog: Catalog) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a story's key depends on besides its own file and links: the site key and
    its newsroom's title (see story_page_inputs)."""
    return keys.site, tuple((group.key, group.title) for group in catalog.newsrooms)


def _settled(cache: BuildCache, catalog: Catalog, ledger: Ledger,
             left: tuple[LoadedStory, ...] | None, config: Config,
             keyed_under: tuple[str, tuple[tuple[str, str], ...]]
             ) -> Callable[[LoadedStory], bool] | None:
    """Which published stories have, without a look, the unit key the last build gave
    them (at 100,000 stories, making every key again took a quarter of a second of an
    hourly build, and a second when stories link to four others): when what changed
    since that build is known (`left`; in desk serve, only while it recalls no key of its
    own: see story_key) and its site key and newsroom titles are this build's, a story read
    with the saved state from a file unchanged since, published then (not withdrawn:
    its page was the notice; not held back: its key was the held pages'), with no image
    file (which may change apart from it) and no related link that may lead to a story
    whose page, or whether it has one, may differ from the last build's. None: not
    known."""
    state = cache.state
    if left is None or state.history is None or state.keyed_under != keyed_under:
        return None
    records, held = state.inspected, frozenset(state.held)
    # The last build's records of publishes name the stories it published (not drafts).
    published_then = state.history.published
    # Those read with the index from a file unchanged since and published then.
    unchanged = state.read_unchanged
    stale = {item.url_path for item in catalog.published
             if (record := records.get(item.path)) is None or record.story is not item
             or not unchanged(item.path) or item.url_path in held
             or item.summary.id not in published_then}
    differ = stale | {item.url_path for item in left}
    differ.update(path for path in catalog.by_path if not ledger.had(path))
    differ.update(old for old, new in catalog.moved.items() if new in differ)
    read = urls.story_links_reader(config, catalog.by_path)  # None: links not read
    # Links written as base_url gives a story's URL, to the stories that stand and to
    # those that differ: most stories' links are told by two set tests.
    written = urls.written_story_links(config, catalog.by_path)
    written_differ = urls.written_story_links(config, differ)

    def stands(item: LoadedStory) -> bool:
        """Whether an unchanged story's key stands: no image file, no link that may
        lead to a story that differs."""
        summary = item.summary
        if summary.images and any(map(is_local, summary.images)):
            return False
        links = summary.related_urls
        if not links or written.issuperset(links) and written_differ.isdisjoint(links):
            return True
        return read is not None and not any(
            urls.may_lead_to(url, differ, read) for url in links)

    # Told for every story here, so that the sets of links (16 MB at 100,000 stories) are
    # let go before the pages are rendered, not held to the build's end.
    unsettled = frozenset(stale.union(item.url_path for item in catalog.published
                                      if item.url_path not in stale and not stands(item)))
    return SettledStories(unsettled, catalog.by_path)


@dataclass(frozen=True)
class SettledStories:
    """The published stories that have the key the last build gave them (see _settled):
    those of the catalog's `published`, by path, but the `unsettled`."""

    unsettled: frozenset[str]
    published: Mapping[str, LoadedStory]

    def __call__(self, item: LoadedStory) -> bool:
        return item.url_path not in self.unsettled and self.published.get(item.url_path) is item

    def paths(self) -> list[str]:
        """The settled stories' URL paths, in the catalog's order: told by one set test
        each (an hour carries 100,000 at 100,000 stories)."""
        unsettled = self.unsettled
        return [path for path in self.published if path not in unsettled]


def _catalog(content: Content, config: Config, clock: Clock, history: UrlHistory,
             cache: BuildCache,
             read: tuple[Mapping[str, tuple[str, str]], Mapping[str, ParsedStory]]
             ) -> tuple[Catalog, list[Finding]]:
    """The catalog and its image files (see _with_media). The URL history after it
    records each story this build publishes (`read`: the texts and stories read on the
    way, desk.content.edits.publish_records)."""
    session = cache.session
    catalog, problems = _with_media(build_catalog(content, config, clock, history), config,
                                    cache)
    # A preview's history is the site's on every save: its own records are kept, so a
    # story's text is read once (see desk.build.cache.Session.records).
    made_before = cache.state.history.published if (
        session is not None and cache.state.history is not None) else None
    catalog = replace(catalog, history=publish_records(catalog.history, catalog.published,
                                                       *read, made_before))
    if session is not None:
        # Its index keeps its own records, not the site's URL paths (read at each start).
        cache.state.history = UrlHistory(published=catalog.history.published)
    return catalog, problems


def _with_media(catalog: Catalog, config: Config, cache: BuildCache
                ) -> tuple[Catalog, list[Finding]]:
    """The catalog with the image files its stories name, and a finding for each that
    cannot be published; the cache's records of them brought up to date."""
    refs = list(local_refs(catalog.published))
    if not refs and not cache.state.media:
        return catalog, []
    probe = MediaProbe(config.content_dir, config.image_max_bytes, config.image_max_pixels,
                       known=cache.state.media, clean=_clean_blobs(config.content_dir))
    media, problems, records = probe_media(refs, probe)
    cache.state.media = records
    return replace(catalog, media=media), problems


def _image_findings(inspection: Inspection, config: Config, cache: BuildCache,
                    drafts: bool) -> list[Finding]:
    """The findings of the image files the stories shown name, each at the story that
    names it (the probe's records kept, so the catalog's probe reads none again)."""
    refs = list(local_refs((*inspection.stories, *(inspection.drafts if drafts else ()))))
    if not refs:
        return []
    probe = MediaProbe(config.content_dir, config.image_max_bytes, config.image_max_pixels,
                       known=cache.state.media, clean=_clean_blobs(config.content_dir))
    _, problems, records = probe_media(refs, probe)
    cache.state.media = {**cache.state.media, **records}
    return problems


def _clean_blobs(content: Path) -> Callable[[], Mapping[str, str]]:
    """Git's clean files below the content folder, asked for once, when first needed."""
    found: list[dict[str, str]] = []

    def clean() -> Mapping[str, str]:
        if not found:
            found.append(dict(clean_blobs(content)))
        return found[0]

    return clean


def _prepared(ctx: RenderContext, assets: tuple[Asset, ...], entries: Mapping[str, Entry],
              parsed: dict[str, ParsedStory]) -> tuple[RenderContext, KeyMaker]:
    """The render context with what this build parsed and the feed entries the index
    keeps, and the unit keys."""
    # Every page shows the site values (the newsroom's pages in the navigation, the
    # policies in the JSON-LD): they are part of every key.
    keys = KeyMaker(site_key(ctx.config, (a.path for a in assets), repr(ctx.site)))
    # The entries made in this process go into the first map; the index's are only read.
    kept = ChainMap({}, cast(MutableMapping[str, object], entries))
    return replace(ctx, parsed=parsed, stories=StoryResults(entries=kept)), keys


def _render_and_index(ctx: RenderContext, plan: Plan, assets: tuple[Asset, ...],
                      using: tuple[BuildCache, Workers], timer: Timer
                      ) -> tuple[Indexed, RenderContext]:
    """Every file of the site and the search index: the stories first, then the search
    index of them (Pagefind, in its own process) while the pages around them render."""
    cache, workers = using
    ctx = render_story_pages(ctx, plan, workers)
    if plan.left is not None:
        ctx = replace(ctx, since=since_last(ctx.catalog, ctx.stories.changed or (),
                                            plan.left))
    if not ctx.config.search:
        render_around(ctx, plan, assets, workers)
        timer.lap("render")
        return Indexed(), ctx
    indexing = _start_search(ctx, cache, plan.ledger, plan.writer)
    try:
        render_around(ctx, plan, assets, workers)
        timer.lap("render")
        indexed = indexing.finish()
    finally:
        indexing.cancel()  # after a failure: no Pagefind left running, no scratch folder
    timer.lap("search")  # the part of indexing the pages around the stories did not hide
    return indexed, ctx


def _start_search(ctx: RenderContext, cache: BuildCache, ledger: Ledger, writer: SiteWriter
                  ) -> Indexing:
    """The search index of this build, started: pages from the staged site, the copies
    of the fresh pages kept beside the saved state, or rendered again."""
    catalog = ctx.catalog
    nothing = Wanted(frozenset(), frozenset())

    def render(url: str) -> bytes:
        outputs, _ = render_story_unit(catalog.by_path[url], "", ctx, nothing)
        return outputs[0].data

    copies = search_copies(cache.file) if cache.file else None
    return start_search(catalog.published, cache.state.search_of(writer.previous_id),
                        (ledger, writer, Pages(writer.path, copies, render)), ctx.config)


def _published(config: Config, clock: Clock, site: Path | ChangesOnly, cache: BuildCache,
               jobs: int
               ) -> tuple[HoldBack | None, dict[str, ParsedStory], list[Finding], UrlHistory,
                          tuple[tuple[LoadedStory, ...] | None, Mapping[str, tuple[str, str]]]]:
    """What this build publishes (None when the URL history cannot be read), the stories
    parsed on the way (for their pages), the findings that count, the URL history, and
    the last versions of the stories whose files changed or went (None: not known) with
    the text digests read to tell silent edits (desk.content.edits).
    The inspection itself, with its lists of every file, is not held past this."""
    inspection, findings, history = _inspect(config, clock, _out_dir(site), cache, jobs)
    if inspection is None:
        return None, {}, findings, history, (None, {})
    # With --hold-back, a story whose image cannot be published is held back too.
    images = _image_findings(inspection, config, cache, clock.drafts) if clock.hold_back else []
    sorted_out = _hold_back(inspection, (findings, images), config, clock, history, site)
    return (sorted_out, {**inspection.parsed, **sorted_out.parsed}, list(sorted_out.findings),
            history, (inspection.replaced, inspection.texts))


def _left(replaced: tuple[LoadedStory, ...] | None, content: Content, catalog: Catalog,
          ledger: Ledger) -> tuple[LoadedStory, ...] | None:
    """The stories that changed or left the published set since the last build, as they
    were then: the last versions of those whose files changed or went, and the stories
    of unchanged files that the last build published and this one does not (withdrawn,
    held again, drafts no longer shown). None when the saved inspections were no use."""
    if replaced is None:
        return None
    published = catalog.by_path
    gone = [item for item in (*content.stories, *content.drafts)
            if item.url_path not in published and ledger.had(item.url_path)]
    return (*replaced, *gone)


def _hold_back(inspection: Inspection, found: tuple[list[Finding], list[Finding]],
               config: Config, clock: Clock, history: UrlHistory, site: Path | ChangesOnly
               ) -> HoldBack:
    """What this build publishes: with `clock.hold_back`, every story but the held ones
    (the last published pages of a held story read from the output folder, or from the
    live site when the build writes only the changes); else all of the content, or
    nothing when any finding is an error (`found`: the findings, and those of the image
    files the stories name, found only when holding back)."""
    findings, images = found
    if clock.hold_back:
        published = ((live_site(config.base_url), config.base_url)
                     if isinstance(site, ChangesOnly) else
                     (site_folder(site), str(site)))
        return hold_back(inspection, findings, config, history, published, images)
    return HoldBack(inspection.content, tuple(findings))


def _with_held(findings: list[Finding], held: tuple[HeldStory, ...]) -> tuple[Finding, ...]:
    """A refused build's findings: the held stories' too, since nothing was published."""
    if not held:
        return tuple(findings)
    return (*findings, *sort_findings(f for h in held for f in h.findings))


def _out_dir(site: Path | ChangesOnly) -> Path:
    return site.out_dir if isinstance(site, ChangesOnly) else site


def _inspect(config: Config, clock: Clock, out_dir: Path, cache: BuildCache, jobs: int
             ) -> tuple[Inspection | None, list[Finding], UrlHistory]:
    """The URL history this build starts from, and the content inspected with the
    findings that count for this build (the drafts' only when drafts are shown); no
    inspection when the history cannot be read."""
    history, problems = cache.recall_history(out_dir)
    if problems:
        return None, problems, history
    session = cache.session
    changed: set[str] | None = None
    content: Path | None = config.content_dir  # a build may ask git what changed
    if session is not None and session.changed is not None:  # desk serve: its watcher knows
        changed, content = session.changed, None
    surveyed = (cache.survey.result() if cache.survey is not None and content is not None
                else None)
    inspection = inspect_content(
        config, InspectionCache(cache.state, check_key(config), changed, content, surveyed),
        jobs, history, session)
    counted = list(inspection.findings)
    if clock.drafts:
        counted = sort_findings([*counted, *inspection.draft_findings])
    return inspection, counted, history


@dataclass(frozen=True)
class Workers:
    """How many processes may render, who hears how far they got, and what is held while
    a worker is forked (a long-running process's Session.fork_gate)."""

    jobs: int = 1
    progress: Progress | None = None
    gate: AbstractContextManager[object] = field(default_factory=nullcontext)


@dataclass(frozen=True)
class Plan:
    """How a build decides and writes: unit keys, the ledger of units, the writer, and
    the last published versions that stand in for held stories (by URL path), whose
    pages are kept as they are."""

    keys: KeyMaker
    ledger: Ledger
    writer: SiteWriter
    stand_ins: Mapping[str, StandIn] = field(default_factory=dict)
    # The stories that changed or left the published set since the last build, as they
    # were then (None: not known; see _changed_since): with the stories whose keys changed,
    # they tell which groups' list pages may differ from the last build's
    # (desk.render.since).
    left: tuple[LoadedStory, ...] | None = None
    # Which stories have the key the last build gave them, known without making it
    # (None: not known; see _settled).
    settled: Callable[[LoadedStory], bool] | None = None

    def write(self, units: Units, workers: Workers | None = None,
              describe: Describe | None = None) -> None:
        """Each unit kept when its key is unchanged, else rendered and written: here, one
        at a time, or shared with forked workers (up to `workers.jobs` processes in all)
        when there are many; `describe` names a worker's failure (see describe_failure)."""
        todo = self._to_render(units)
        done = (self._shared(list(todo), workers, describe)
                if workers is not None and workers.jobs > 1 and describe is not None
                else self._here(todo))
        for unit, key, files in done:
            if key is not None:
                self.ledger.record_files(unit.id, key, files)

    def _to_render(self, units: Units) -> Iterator[tuple[Unit, str | None]]:
        """The units whose files the ledger did not keep, with their keys (None: rendered
        on every build)."""
        for unit in units:
            if isinstance(unit, CarriedUnits):
                yield from self._to_render(self._not_carried(unit))
                continue
            if unit.carried is not None:
                if self.ledger.carry(unit.id) is not None:
                    continue  # its inputs, so its key, are the last build's
                unit = unit._replace(inputs=unit.carried(), carried=None)
            if unit.inputs is None:
                yield unit, None
                continue
            key = (digest(*unit.inputs) if unit.standalone
                   else self.keys.key(unit.inputs))
            if self.ledger.reuse(unit.id, key) is None:
                yield unit, key

    def _not_carried(self, batch: CarriedUnits) -> Iterator[Unit]:
        """The units of a batch that the ledger did not carry (the last build left none,
        or the writer cannot keep it), each made as it would have come alone, with its
        inputs."""
        carried = self.ledger.carry_many(batch.ids)
        if len(carried) == len(batch.ids):
            return
        for i, unit_id in enumerate(batch.ids):
            if unit_id not in carried:
                unit = batch.unit_at(i)
                yield (unit if unit.carried is None
                       else unit._replace(inputs=unit.carried(), carried=None))

    def _here(self, todo: Iterable[tuple[Unit, str | None]]
              ) -> Iterator[tuple[Unit, str | None, tuple[str, ...]]]:
        """Each unit with its files, rendered and written in this process as it comes."""
        for unit, key in todo:
            yield unit, key, self.writer.write(unit.render())

    def _shared(self, todo: list[tuple[Unit, str | None]], workers: Workers,
                describe: Describe) -> Iterator[tuple[Unit, str | None, tuple[str, ...]]]:
        """Each unit with its files, in order, its share rendered here or in a forked
        worker (all here when they are few)."""
        count = min(workers.jobs, sum(unit.cost for unit, _ in todo) // PARALLEL_MIN_UNITS)
        if count <= 1:
            yield from self._here(todo)
            return
        # Every count-th unit: list pages of a kind cost alike and come one after another.
        shares = [todo[i::count] for i in range(count)]
        self.writer.flush()  # the kept units' links made before a worker writes beside them
        forked = start_unit_workers([[unit.render for unit, _ in share] for share in shares[1:]],
                                    describe, self.writer.path, self.writer.shares_files,
                                    workers.gate)
        try:
            done = [[self.writer.write(unit.render()) for unit, _ in shares[0]]]
            for worker in forked:
                written = collect([worker])
                for files, size in written:
                    self.writer.adopt(files, size)
                done.append([files for files, _ in written])
        finally:
            stop_workers(forked)
        for i, (unit, key) in enumerate(todo):
            yield unit, key, done[i % count][i // count]


def render_context(catalog: Catalog, config: Config, clock: Clock, session: Session | None,
                   assets: tuple[Asset, ...], cache_folder: Path | None = None) -> RenderContext:
    """What every renderer of this build reads (story results come later); the
    templates' compiled code is kept in `cache_folder`, if given."""
    site = site_context(config, {a.name: urls.href(config, a.path) for a in assets},
                        catalog.pages)
    compiled = (CompiledTemplates(cache_folder / COMPILED_TEMPLATES, code_fingerprint())
                if cache_folder is not None else None)
    return RenderContext(catalog, config, _environment(config, session, compiled), site,
                         Prose(), clock.now)


def render_story_pages(ctx: RenderContext, plan: Plan, workers: Workers) -> RenderContext:
    """Every story kept or rendered: the context with what the pages around them need,
    the feed entries of every story some feed carries among it."""
    in_feeds = frozenset(feed_members(ctx.catalog, ctx.config))
    ctx = replace(ctx, stories=render_stories(ctx, plan, ctx.stories.entries, in_feeds,
                                              workers))
    entries = ctx.stories.entries
    for path in sorted(in_feeds):
        # Made here when neither captured nor kept in the index, whichever process
        # renders the feed: the index keeps them for the next build.
        item = ctx.catalog.by_path[path]
        if ctx.story_key(path, item.digest) not in entries:
            story_entry(ctx, item)
    return ctx


def kept_entries(ctx: RenderContext) -> frozenset[str]:
    """The keys of the feed entries the index keeps: those of the stories some feed
    carries, by the key their page was rendered or kept under."""
    keys = ctx.stories.keys
    return frozenset(keys[path] for path in feed_members(ctx.catalog, ctx.config)
                     if path in keys)


def render_around(ctx: RenderContext, plan: Plan, assets: tuple[Asset, ...],
                  workers: Workers) -> None:
    """Every file of the site besides the stories (render_story_pages first): the pages
    around them, then the assets."""
    plan.write(site_units(ctx), workers,
               partial(describe_failure, templates_dir=ctx.config.templates_dir))
    for asset in assets:
        plan.writer.copy(asset.source, asset.path)


def render_stories(ctx: RenderContext, plan: Plan, entries: MutableMapping[str, object],
                   in_feeds: frozenset[str], workers: Workers) -> StoryResults:
    """Each published story kept or rendered (in forked workers when there are many);
    what the pages around the stories need to know of them (`in_feeds`: the paths of the
    stories some feed carries, whose entries are captured as they render, into `entries`)."""
    markdown: dict[str, bytes] = {}
    todo: list[tuple[LoadedStory, str]] = []
    changed: set[str] = set()  # stand-ins and rendered stories: their keys may be new
    catalog, key_of, reuse = ctx.catalog, story_key(ctx, plan.keys), plan.ledger.reuse
    carried = _carry_settled(plan, catalog.published)
    for item in catalog.published:  # every story on every save: kept lean
        if item.url_path in carried:
            continue
        stand_in = plan.stand_ins.get(item.url_path) if plan.stand_ins else None
        if stand_in is not None and stand_in.item == item:
            keep_stand_in(stand_in, ctx, plan)
            changed.add(item.url_path)
            markdown[item.url_path] = stand_in.markdown
            continue
        key = key_of(item)
        if reuse(item.url_path, key) is None:
            todo.append((item, key))
    latest = ctx.catalog.latest_edition
    wanted = Wanted(frozenset(s.url_path for s in latest.stories) if latest else frozenset(),
                    in_feeds)

    def render(item: LoadedStory, key: str) -> tuple[list[Output], RenderedStory]:
        return render_story_unit(item, key, ctx, wanted)

    changed.update(item.url_path for item, _ in todo)
    for record in _render_todo(todo, render, plan.writer, ctx, workers):
        plan.ledger.record_files(record.path, record.key, record.files, record.json_digest)
        if record.markdown is not None:
            markdown[record.path] = record.markdown
        if record.entry is not None:
            entries[record.key] = record.entry
    # Every story's key and digest as the ledger recorded it: a kept story's the string
    # read with the state, not a second one as large as the archive.
    return StoryResults(plan.ledger.keys(), plan.ledger.json_digests(), markdown, entries,
                        frozenset(changed))


def _carry_settled(plan: Plan, published: Sequence[LoadedStory]) -> Set[str]:
    """The settled stories' units (see _settled), carried by the ledger in one pass but
    for those that stand in for held ones: the ones carried (the rest are keyed)."""
    settled, stand_ins = plan.settled, plan.stand_ins
    if settled is None:
        return frozenset()
    if isinstance(settled, SettledStories) and not stand_ins:
        # Told for this build's catalog, whose published stories these are.
        return plan.ledger.carry_many(settled.paths())
    return plan.ledger.carry_many(
        item.url_path for item in published
        if settled(item) and ((stand_in := stand_ins.get(item.url_path)) is None
                              or stand_in.item != item))


def story_key(ctx: RenderContext, keys: KeyMaker) -> Callable[[LoadedStory], str]:
    """A story's unit key: its file and what its page shows of the catalog (see
    story_page_inputs)."""
    catalog, config = ctx.catalog, ctx.config

    def make(item: LoadedStory) -> str:
        return keys.key((item.digest, story_page_inputs(item, catalog, config)))

    return make


def keep_stand_in(stand_in: StandIn, ctx: RenderContext, plan: Plan) -> None:
    """Keep a held story's last published pages as they are, under a unit key of their
    own (their pages' bytes and what the feed entry depends on: never a rendered page's)."""
    item = stand_in.item
    key = plan.keys.key(("held", stand_in.digest,
                         story_page_inputs(item, ctx.catalog, ctx.config)))
    if not plan.ledger.hold(item.url_path, key, stand_in.files, stand_in.json_digest):
        # No last site to keep them in (changes to nothing): write the bytes read from it.
        outputs = [Output("/" + f, data) for f, data in zip(stand_in.files, stand_in.pages,
                                                             strict=True)]
        # writer.write raises WriteError on two outputs for a file
        plan.ledger.record_files(item.url_path, key, plan.writer.write(outputs),
                                 stand_in.json_digest)


def _render_todo(todo: list[tuple[LoadedStory, str]], render: RenderUnit, writer: SiteWriter,
                 ctx: RenderContext, workers: Workers) -> Iterator[RenderedStory]:
    """Render stories here, or share them with forked workers that write their own files."""
    count = min(workers.jobs, len(todo) // PARALLEL_MIN_STORIES)
    if count <= 1:
        yield from _render_here(todo, render, writer, workers.progress, 1, len(todo))
        return
    chunks = _shares(todo, count)
    writer.flush()  # the kept stories' links made before a worker writes beside them
    forked = start_workers(chunks[1:], render,
                           partial(describe_failure, templates_dir=ctx.config.templates_dir),
                           writer.path, writer.shares_files, workers.gate)
    try:
        # This process renders the first share meanwhile.
        yield from _render_here(chunks[0], render, writer, workers.progress,
                                len(todo) / max(1, len(chunks[0])), len(todo))
        for record in collect(forked):
            writer.adopt(record.files, record.size)
            yield record
    finally:
        stop_workers(forked)


def _render_here(todo: list[tuple[LoadedStory, str]], render: RenderUnit, writer: SiteWriter,
                 progress: Progress | None, scale: float, total: int
                 ) -> Iterator[RenderedStory]:
    for i, (item, key) in enumerate(todo, start=1):
        outputs, record = render(item, key)
        writer.write(outputs)
        if progress is not None:
            # With workers, this process's share stands for the whole (scaled).
            progress(min(round(i * scale), total), total)
        yield record


def _shares(todo: list[tuple[LoadedStory, str]], workers: int
            ) -> list[list[tuple[LoadedStory, str]]]:
    """Split the stories to render into equal shares, this process's first.

    Equal, as every process renders stories only: the list pages need every story's
    record, so they wait for the workers whatever the shares."""
    size = -(-len(todo) // workers)
    return [todo[i: i + size] for i in range(0, len(todo), size)]


def describe_failure(exc: BaseException, templates_dir: Path) -> Finding | None:
    """The finding of a failure while rendering (None: not one a build reports)."""
    if isinstance(exc, TemplateError):
        return template_finding(exc, templates_dir)
    if isinstance(exc, ContentChanged):
        return Finding(exc.path, "", "content-changed",
                       "changed while the site was being built; build again")
    if isinstance(exc, RenderFailed | BrokenImage):
        return exc.finding
    return None


def build_failure(exc: BaseException, config: Config, out: Path) -> Finding | None:
    """The finding that explains why a build stopped (None: an unexpected error)."""
    if isinstance(exc, WriteError | OSError):
        return Finding(str(out), "", "output", str(exc))
    if isinstance(exc, Exception):
        return describe_failure(exc, config.templates_dir)
    return None


def _environment(config: Config, session: Session | None,
                 compiled: CompiledTemplates | None) -> Environment:
    """The template environment, kept by a long-running process across builds."""
    made_from = config.model_dump_json(include={"templates_dir"})
    if session is not None and session.environment and session.environment[0] == made_from:
        env: Environment = session.environment[1]
        return env
    env = make_environment(config, reload=session is not None, compiled=compiled)
    if session is not None:
        session.environment = (made_from, env)
    return env
