"""The search index: Pagefind bundles laid out by desk.search.bundles, indexed into the staged site.

Each bundle is a unit of the ledger under `/pagefind/NAME/`: a sealed bundle is keyed by
its name (its entries and Pagefind's version), so it is kept, linked from the last site,
for as long as the layout keeps it; the fresh bundle is keyed by its stories' page keys.
A bundle is indexed by running Pagefind's CLI over a scratch folder of hard links to
just its story pages, at their site paths (so the URLs in the index are right), and
written straight into the staged site. `/search/bundles.json` tells the search page
which bundles to merge and which of their entries are stale.

The runs go one at a time, the first in the background: a build starts it once the
story pages are staged (start_search) and renders the pages around the stories while
Pagefind indexes, on a core of its own; then it waits (Indexing.finish), or stops the
run when the build fails (Indexing.cancel).
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from operator import attrgetter
from pathlib import Path

import orjson

from desk import urls
from desk.background import Background, Outcome
from desk.build.ledger import Ledger
from desk.build.writer import MARKER, SiteWriter, link_or_copy, staging_prefix
from desk.config import Config
from desk.content.digests import digest
from desk.content.findings import Finding
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.search.bundles import (
    FRESH,
    Layout,
    Limits,
    Member,
    plan,
    sealed_bundle,
)

# Bump when what desk gives Pagefind changes in a way old bundles should not be kept.
FORMAT = "desk-search/1"
# Pagefind's interfaces, which desk's search page does not use.
_UNUSED = ("pagefind-ui.", "pagefind-modular-ui.", "pagefind-component-ui.",
           "pagefind-highlight.")
_TIMEOUT = 1800
# The index's order of its stories, oldest first (read in C: it is asked of each one).
_ORDER = attrgetter("summary.published_at", "url_path")

Sealed = dict[str, tuple[str, ...]]


@dataclass
class Indexed:
    """What this build's search index holds: the bundles published, and the findings."""

    sealed: Sealed = field(default_factory=dict)
    fresh: bool = False
    findings: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class Pages:
    """Where the story pages to index come from: the staged site when it holds them;
    else (a build that writes only the changes) a copy kept in `copies` by entry token
    (the fresh bundle's pages, which every such build indexes again); else `render`, the
    story page rendered again from its URL path (a bundle sealed anew: at most one a
    build, however heavy)."""

    site: Path
    copies: Path | None = None
    render: Callable[[str], bytes] | None = None

    def place(self, member: Member, target: Path) -> None:
        """Put the member's page at `target` (a hard link where it can be)."""
        relative = urls.relative_file(member.url)
        for source in (self.site / relative,
                       self.copies / f"{member.token}.html" if self.copies else None):
            if source is not None and source.is_file():
                link_or_copy(source, target)
                return
        if self.render is None:
            raise FileNotFoundError(self.site / relative)
        target.write_bytes(self.render(member.url))

    def keep_copies(self, fresh: Sequence[Member]) -> None:
        """Keep a copy of each fresh page for the next build, and no other."""
        if self.copies is None:
            return
        self.copies.mkdir(parents=True, exist_ok=True)
        wanted = {f"{m.token}.html": m for m in fresh}
        for old in self.copies.iterdir():
            if old.name not in wanted:
                old.unlink()
        for name, member in wanted.items():
            copy = self.copies / name
            if not copy.exists():
                scratch = copy.with_name(name + ".tmp")
                scratch.unlink(missing_ok=True)
                self.place(member, scratch)
                os.replace(scratch, copy)


@lru_cache(maxsize=1)
def engine() -> str:
    """The indexer and its version: bundles of another version are never merged."""
    for name in ("pagefind-bin", "pagefind-bin-extended", "pagefind"):
        try:
            return f"{FORMAT} pagefind {version(name)}"
        except PackageNotFoundError:
            continue
    return f"{FORMAT} pagefind unknown"


def unit_of(name: str) -> str:
    """The ledger unit (a site folder) of a bundle."""
    return f"{urls.PAGEFIND}{name}/"


def members_of(published: Sequence[LoadedStory]) -> dict[str, str]:
    """The published stories as the index sees them: each one's entry token with its URL,
    oldest first."""
    stories = sorted((s for s in published if not s.draft), key=_ORDER)
    return {s.search_entry: s.url_path for s in stories}


def start_search(published: Sequence[LoadedStory], previous: Sealed,
                 using: tuple[Ledger, SiteWriter, Pages], config: Config) -> Indexing:
    """Lay out this build's bundles and start indexing the first one (once the story
    pages are staged): the caller renders the pages around the stories meanwhile, then
    calls `finish` (or `cancel` when it fails)."""
    ledger, writer, _ = using
    known = {n: t for n, t in previous.items() if ledger.known(unit_of(n), n)}
    layout = plan(members_of(published), known,
                  Limits(config.search_bundle_pages, config.search_fresh_pages))
    writer.flush()  # the story pages are linked from the staged site
    runs = [_Run(sealed_bundle((m.token for m in group), engine()), group)
            for group in layout.seal]
    fresh_key, fresh_kept = "", False
    if layout.fresh:
        fresh_key = digest(engine(), *(f"{m.url}={ledger.units[m.url].key}"
                                       for m in layout.fresh if m.url in ledger.units))
        fresh_kept = ledger.reuse(unit_of(FRESH), fresh_key) is not None
        if not fresh_kept:
            runs.append(_Run(FRESH, layout.fresh, fresh_key))
    # The layout (its stale entries with it), not the 100,000 members, is held while the
    # pages around the stories render. A bundle sealed by this build holds none.
    indexing = Indexing(layout, runs, using, config, fresh_kept)
    if runs:
        try:
            indexing.launch(runs[0])
        except BaseException:  # the caller cannot stop what it was never given
            indexing.cancel()
            raise
    return indexing


@dataclass
class _Run:
    """One Pagefind run: a bundle's name, its stories and its key (a sealed bundle's is
    its name), and, once started, its scratch folder and Pagefind's process."""

    name: str
    group: Sequence[Member]
    key: str = ""
    scratch: Path | None = None
    process: Background | None = None


class Indexing:
    """The Pagefind runs of one build, one at a time: the first runs while the build
    renders the pages around the stories (Pagefind on one core, desk on the other), the
    others when the build asks for the result."""

    def __init__(self, layout: Layout, runs: list[_Run],
                 using: tuple[Ledger, SiteWriter, Pages], config: Config,
                 fresh_kept: bool = False) -> None:
        self._layout = layout
        self._runs = runs
        self._ledger, self._writer, self._pages = using
        self._config = config
        self._fresh_kept = fresh_kept  # the last build's fresh bundle, kept as it is

    def launch(self, run: _Run) -> None:
        """Stage the run's pages in a scratch folder and start Pagefind over them."""
        writer = self._writer
        writer.clear(unit_of(run.name))
        out = writer.out_dir
        run.scratch = out.parent / f"{staging_prefix(out)}search-{uuid.uuid4().hex[:12]}"
        _link_pages(run.scratch, self._pages, run.group)
        # Pagefind's errors with its output: the last line says what went wrong.
        run.process = Background([sys.executable, "-m", "pagefind", "--site", str(run.scratch),
                                  "--output-path", str(self._target(run)), "--silent"],
                                 with_errors=True)

    def finish(self) -> Indexed:
        """Wait for every run, record the bundles and write the manifest."""
        layout, ledger, done = self._layout, self._ledger, Indexed()
        merged: set[str] = set()
        for run in self._runs:
            if run.scratch is None:
                self.launch(run)
            recorded = self._recorded(run, done.findings)
            if run.name == FRESH:
                done.fresh = recorded
            elif recorded:
                done.sealed[run.name] = tuple(m.token for m in run.group)
                merged.update(layout.merged)  # kept until their replacement is indexed
        for name, tokens in layout.kept.items():
            if name not in merged and ledger.reuse(unit_of(name), name) is not None:
                done.sealed[name] = tokens
        done.fresh = done.fresh or self._fresh_kept
        self._pages.keep_copies(layout.fresh if done.fresh else ())
        self._writer.write([Output(urls.SEARCH_BUNDLES,
                                   manifest(done, layout.stale, self._config))])
        return done

    def cancel(self) -> None:
        """Stop any run still going and remove the scratch folders (after a failure)."""
        for run in self._runs:
            self._close(run)

    def _target(self, run: _Run) -> Path:
        """Where the run's bundle goes in the staged site."""
        return self._writer.path / urls.relative_file(unit_of(run.name)).rpartition("/")[0]

    def _recorded(self, run: _Run, findings: list[Finding]) -> bool:
        """Wait for a run and record its bundle (False, with a finding, when Pagefind
        failed: the site is published without it)."""
        problem = _problem(run.process.outcome(_TIMEOUT)) if run.process else "not started"
        self._close(run)
        writer, target = self._writer, self._target(run)
        if problem is not None or not target.is_dir():
            findings.append(Finding(str(writer.out_dir), "", "search",
                                    f"search index not built: {problem or 'no output'}",
                                    severity="warning"))
            shutil.rmtree(target, ignore_errors=True)
            return False
        files = _bundle_files(target, writer.path)
        writer.adopt(files, sum((writer.path / f).stat().st_size for f in files))
        self._ledger.record_files(unit_of(run.name), run.key or run.name, files)
        return True

    @staticmethod
    def _close(run: _Run) -> None:
        """Stop the run if it still goes, then remove its scratch folder."""
        if run.process is not None:
            run.process.stop()
        if run.scratch is not None:
            shutil.rmtree(run.scratch, ignore_errors=True)


def manifest(done: Indexed, stale: dict[str, tuple[str, ...]], config: Config) -> bytes:
    """The search page's bundles.json: where the bundles to merge are (the first one's
    code runs the search: the fresh one's when there is one) and the stale entries of
    the sealed ones (`stale`: by sealed bundle the last build left)."""
    names = ([FRESH] if done.fresh else []) + sorted(done.sealed)
    return orjson.dumps({"bundles": [urls.href(config, unit_of(n)) for n in names],
                         "stale": sorted({t for n in done.sealed for t in stale.get(n, ())})})


def _link_pages(scratch: Path, pages: Pages, group: Sequence[Member]) -> None:
    """A folder of the story pages at their site paths (hard links where they can be)."""
    scratch.mkdir()
    (scratch / MARKER).write_bytes(b"desk search scratch folder; desk may remove it.\n")
    for member in group:
        target = scratch / urls.relative_file(member.url)
        target.parent.mkdir(parents=True, exist_ok=True)
        pages.place(member, target)


def _problem(outcome: Outcome) -> str | None:
    """What went wrong in a Pagefind run (None: nothing)."""
    if outcome.status is None:
        return outcome.problem
    if outcome.status == 0:
        return None
    said = outcome.output.decode(errors="replace").strip().splitlines()[-1:]
    return (said or ["failed"])[0]


def _bundle_files(folder: Path, site: Path) -> tuple[str, ...]:
    """A bundle's files, relative to the site, without the interfaces desk does not use."""
    files = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.name.startswith(_UNUSED):
            path.unlink()
        else:
            files.append(path.relative_to(site).as_posix())
    return tuple(files)
