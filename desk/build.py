"""`desk build`: load → check → catalog → render → write, top to bottom.

`desk serve` calls the same build() with its own output folder; there is no second path.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

from jinja2 import Environment, TemplateError

from desk import urls
from desk.assets import Asset, collect_assets
from desk.cache import BuildCache, Ledger, ParseCache, digest, memo_digest
from desk.catalog import Catalog, build_catalog, paginate
from desk.checks import inspect_content
from desk.config import Config
from desk.findings import Finding
from desk.loader import ContentChanged, LoadedStory, read_story
from desk.parallel import (
    Rendered,
    RenderFailed,
    changed_finding,
    collect,
    fork_safe,
    rendered,
    start_workers,
    stop_workers,
)
from desk.prose import Prose
from desk.render import Output
from desk.render.pages import render_site_pages
from desk.render.story import render_story
from desk.render.templates import make_environment, site_context, template_finding
from desk.render.view import story_signature
from desk.theme import templates_fingerprint
from desk.urls import relative_file
from desk.writer import SiteWriter, Spare, Staging, WriteError

DESK_VERSION = version("desk")
Progress = Callable[[int, int], None]

# Below this many stories per process, forking costs more than it saves.
PARALLEL_MIN_STORIES = 50


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


def cache_file(config: Config, out_dir: Path) -> Path:
    """Where the unit memory of an output folder is kept (never in the site itself)."""
    where = hashlib.sha256(str(out_dir.resolve()).encode()).hexdigest()[:12]
    return config.cache_dir / f"{out_dir.name}-{where}.json"


def build(
    config: Config,
    now: datetime,
    future: bool = False,
    out_dir: Path | None = None,
    cache: BuildCache | None = None,
    jobs: int = 1,
    remove_old: Callable[[Path], None] | None = None,
    use_cache: bool = True,
    progress: Progress | None = None,
    writer: Callable[[Path], SiteWriter] | None = None,
) -> BuildReport:
    """Build the site into out_dir (default: config.output_dir), or refuse on errors.

    `cache` is the memory a long-running caller (desk serve) keeps between builds; without
    one, the unit memory saved beside the output folder is used and updated. `jobs` is
    how many processes may render stories (forked; not for callers with threads).
    `remove_old` deletes the replaced site (default: at once, before returning).
    `use_cache=False` neither reads nor writes the saved memory (a from-scratch build).
    `progress(done, total)` is told how rendering goes, story by story. `writer` makes
    the object that puts files in place (default: a staging folder swapped in whole).
    """
    jobs = jobs if fork_safe() else 1  # workers are forked: only where that is safe
    # A build makes no reference cycles worth collecting, while the collector's scans of
    # the tens of thousands of objects a large site keeps alive (summaries, the build
    # memory) cost up to a third of a rebuild; reference counting frees the rest.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build(config, now, future, out_dir, cache, jobs, remove_old, use_cache,
                      progress, writer)
    finally:
        if collecting:
            gc.enable()


def _build(
    config: Config,
    now: datetime,
    future: bool,
    out_dir: Path | None,
    cache: BuildCache | None,
    jobs: int,
    remove_old: Callable[[Path], None] | None,
    use_cache: bool,
    progress: Progress | None,
    writer: Callable[[Path], SiteWriter] | None,
) -> BuildReport:
    out = out_dir if out_dir is not None else config.output_dir
    persistent = cache is None and use_cache
    if cache is not None:
        memory = cache
    else:
        memory = BuildCache.read(cache_file(config, out)) if use_cache else BuildCache()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        current = time.perf_counter()
        timings[stage] = current - clock
        clock = current

    settings = digest(DESK_VERSION, os.getcwd(),
                      config.model_dump_json(exclude={"output_dir", "cache_dir"}))
    loaded, findings = inspect_content(config, ParseCache(memory, settings), jobs)
    lap("load")
    if any(f.is_error for f in findings):
        return BuildReport(False, tuple(findings), timings=timings)

    catalog = build_catalog(loaded.stories, config, now, future)
    lap("catalog")
    keep_spare = persistent and remove_old is None and writer is None
    try:
        if writer is not None:
            staging: SiteWriter = writer(out)
        else:
            staging = Staging(out, _spare_of(memory) if keep_spare else None, keep_spare)
    except (WriteError, OSError) as exc:
        findings.insert(0, Finding(str(out), "", "output", str(exc).removeprefix(f"{out}: ")))
        return BuildReport(False, tuple(findings), timings=timings)
    previous = memory.units if memory.site_id and memory.site_id == staging.previous_id else {}
    ledger = Ledger(previous, staging)
    try:
        assets = collect_assets(config.static_dir)
        staging.write(render_outputs(catalog, config, assets, now, ledger, staging, jobs,
                                     None if persistent else memory, progress))
        for asset in assets:
            staging.copy(asset.source, asset.path)
        lap("render")
        search_key = ledger.search_key() if config.search else ""
        if config.search:
            index = out / urls.PAGEFIND.strip("/")
            unchanged = bool(previous) and memory.search_key == search_key and index.is_dir()
            # No story page changed: the last index still describes the site.
            if not (unchanged and staging.link_previous(tuple(
                    p.relative_to(out).as_posix() for p in sorted(index.rglob("*"))
                    if p.is_file()))):
                findings += index_for_search(staging.path, out)
            staging.flush()
            lap("search")
        site_id = ledger.site_id()
        staging.swap_in(site_id, remove_old)
        lap("write")
    except TemplateError as exc:
        staging.discard()
        findings.insert(0, template_finding(exc, config.templates_dir))
        return BuildReport(False, tuple(findings), timings=timings)
    except RenderFailed as exc:
        staging.discard()
        findings.insert(0, exc.finding)
        return BuildReport(False, tuple(findings), timings=timings)
    except ContentChanged as exc:
        staging.discard()
        findings.insert(0, changed_finding(exc))
        return BuildReport(False, tuple(findings), timings=timings)
    except (WriteError, OSError) as exc:
        staging.discard()
        cache_file(config, out).unlink(missing_ok=True)  # the next build starts afresh
        findings.insert(0, Finding(str(out), "", "output", str(exc)))
        return BuildReport(False, tuple(findings), timings=timings)
    except BaseException:
        staging.discard()
        raise
    known_before = memory.site_id == staging.previous_id
    memory.spare_id = staging.previous_id or "" if known_before else ""
    memory.spare_units = memory.units if known_before else {}
    memory.spare_loose = memory.loose if known_before else ()
    memory.loose = staging.loose_files({f for u in ledger.units.values() for f in u.files})
    memory.units, memory.site_id, memory.search_key = ledger.units, site_id, search_key
    if persistent:
        with contextlib.suppress(OSError):  # a cache that cannot be saved only costs time
            memory.save(cache_file(config, out))
    return BuildReport(
        ok=True,
        findings=tuple(findings),
        published=catalog.published,
        held=catalog.held,
        files=staging.files,
        bytes=staging.bytes,
        timings=timings,
        out_dir=out,
        reused=ledger.reused,
    )


def _spare_of(memory: BuildCache) -> Spare | None:
    if not memory.spare_id:
        return None
    return Spare(memory.spare_id, memory.spare_units, memory.spare_loose)


def render_outputs(
    catalog: Catalog,
    config: Config,
    assets: tuple[Asset, ...],
    now: datetime,
    ledger: Ledger,
    staging: SiteWriter,
    jobs: int = 1,
    memory: BuildCache | None = None,
    progress: Progress | None = None,
) -> Iterator[Output]:
    """Every rendered file of the site, stories first, then the pages around them.

    A unit whose inputs are unchanged since the last build is linked, not rendered. With
    jobs > 1 and enough stories to render, forked workers render some of them and write
    their files themselves. `memory` (desk serve's) keeps the template environment and
    feed entries between builds.
    """
    env = _environment(config, memory)
    prose = Prose()
    site = site_context(config, {a.name: urls.href(config, a.path) for a in assets})
    base = digest(DESK_VERSION, templates_fingerprint(config.templates_dir),
                  *(a.path for a in assets),
                  config.model_dump_json(exclude={"output_dir", "content_dir", "cache_dir",
                                                  "templates_dir", "static_dir"}))
    memo = memory.key_memo if memory is not None else None
    latest = catalog.latest_edition
    in_latest = {s.url_path for s in latest.stories} if latest else set()
    digests: dict[str, str] = {}
    latest_markdown: dict[str, bytes] = {}
    todo: list[tuple[LoadedStory, str]] = []
    keys: dict[str, str] = {}
    for item in catalog.published:
        path = item.url_path
        key = keys[path] = memo_digest(memo, base, item.digest,
                                       story_signature(item, catalog, config))
        unit = ledger.reuse(path, key)
        if unit is None:
            todo.append((item, key))
            continue
        digests[path] = unit.json_digest
        if path in in_latest:
            latest_markdown[path] = (staging.out_dir / relative_file(path + "index.md")
                                     ).read_bytes()

    def render(item: LoadedStory) -> list[Output]:
        return render_story(*read_story(item), catalog, config, env, prose, site)

    def done(result: Rendered) -> None:
        ledger.record_files(result.path, result.key, result.files, result.json_digest)
        digests[result.path] = result.json_digest
        if result.markdown is not None:
            latest_markdown[result.path] = result.markdown

    workers = min(jobs, len(todo) // PARALLEL_MIN_STORIES)
    if workers > 1:
        chunks = _shares(todo, workers, catalog, config)
        forked = start_workers(chunks[1:], render, in_latest, staging.path,
                               config.templates_dir, staging.recycled)
        try:
            # This process renders the first share meanwhile, then the list pages.
            yield from _render_here(chunks[0], render, in_latest, done, progress,
                                    len(todo) / max(1, len(chunks[0])), len(todo))
            for result in collect(forked):
                staging.adopt(result.files, result.size)
                done(result)
        finally:
            stop_workers(forked)
    else:
        yield from _render_here(todo, render, in_latest, done, progress, 1, len(todo))
    yield from render_site_pages(catalog, config, env, site, prose, now, digests,
                                 latest_markdown, ledger, base, keys,
                                 memory.feed_entries if memory is not None else None, memo)


# What rendering one list page costs, in stories (measured: about 0.8).
LIST_PAGE_COST = 0.8


def _shares(todo: list[tuple[LoadedStory, str]], workers: int, catalog: Catalog,
            config: Config) -> list[list[tuple[LoadedStory, str]]]:
    """Split the stories to render among workers; this process's share (the first) is
    smaller by the list pages it renders afterwards, when they are all to be rendered."""
    pages = 0.0
    if len(todo) == len(catalog.published):
        pages = LIST_PAGE_COST * (len(catalog.editions) + sum(
            paginate(len(g.stories), config.page_size) for g in catalog.newsrooms))
    own = max(0, min(len(todo), round((len(todo) + pages) / workers - pages)))
    rest = todo[own:]
    size = -(-len(rest) // (workers - 1))
    return [todo[:own]] + [rest[i: i + size] for i in range(0, len(rest), size)]


def _environment(config: Config, memory: BuildCache | None) -> Environment:
    """The template environment, kept in memory across builds of one process."""
    made_from = config.model_dump_json(include={"templates_dir"})
    if memory is not None and memory.environment and memory.environment[0] == made_from:
        env: Environment = memory.environment[1]
        return env
    env = make_environment(config, reload=memory is not None)
    if memory is not None:
        memory.environment = (made_from, env)
    return env


def index_for_search(site: Path, out: Path) -> list[Finding]:
    """Run Pagefind over the staged site (story bodies carry data-pagefind-body)."""
    try:
        result = subprocess.run([sys.executable, "-m", "pagefind", "--site", str(site),
                                 "--silent"], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Finding(str(out), "", "search", f"search index not built: {exc}",
                        severity="warning")]
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["failed"]
        return [Finding(str(out), "", "search", f"search index not built: {reason[0]}",
                        severity="warning")]
    return []


def _render_here(
    todo: list[tuple[LoadedStory, str]],
    render: Callable[[LoadedStory], list[Output]],
    in_latest: set[str],
    done: Callable[[Rendered], None],
    progress: Progress | None = None,
    scale: float = 1,
    total: int = 0,
) -> Iterator[Output]:
    for i, (item, key) in enumerate(todo, start=1):
        outputs = render(item)
        done(rendered(item, key, outputs, item.url_path in in_latest))
        if progress is not None:
            # With workers, this process's share stands for the whole (scaled).
            progress(min(round(i * scale), total), total)
        yield from outputs
