"""The search index: Pagefind bundles laid out by desk.search.bundles, indexed into the staged site.

Each bundle is a unit of the ledger under `/pagefind/NAME/`: a sealed bundle is keyed by
its name (its entries and Pagefind's version), so it is kept, linked from the last site,
for as long as the layout keeps it; the fresh bundle is keyed by its stories' page keys.
A bundle is indexed by running Pagefind's CLI over a scratch folder of hard links to
just its story pages, at their site paths (so the URLs in the index are right), and
written straight into the staged site. `/search/bundles.json` tells the search page
which bundles to merge and which of their entries are stale.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import orjson

from desk import urls
from desk.build.ledger import Ledger
from desk.build.writer import MARKER, SiteWriter, link_or_copy, staging_prefix
from desk.config import Config
from desk.content.digests import digest, search_entry
from desk.content.findings import Finding
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.search.bundles import FRESH, Limits, Member, plan, sealed_bundle, stale_tokens

# Bump when what desk gives Pagefind changes in a way old bundles should not be kept.
FORMAT = "desk-search/1"
# Pagefind's interfaces, which desk's search page does not use.
_UNUSED = ("pagefind-ui.", "pagefind-modular-ui.", "pagefind-component-ui.",
           "pagefind-highlight.")
_TIMEOUT = 1800

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


def members_of(published: Sequence[LoadedStory]) -> list[Member]:
    """The published stories as the index sees them, oldest first."""
    stories = sorted((s for s in published if not s.draft),
                     key=lambda s: (s.summary.published_at, s.url_path))
    return [Member(s.url_path, search_entry(s.url_path, s.digest)) for s in stories]


def index_search(published: Sequence[LoadedStory], previous: Sealed, ledger: Ledger,
                 writer: SiteWriter, config: Config, pages: Pages | None = None) -> Indexed:
    """Lay out, index and keep the bundles of this build; write the manifest (`pages`:
    where the pages to index come from; default: the staged site)."""
    pages = pages or Pages(writer.path)
    members = members_of(published)
    known = {n: t for n, t in previous.items() if ledger.known(unit_of(n), n)}
    layout = plan(members, known, Limits(config.search_bundle_pages, config.search_fresh_pages))
    writer.flush()  # the story pages are linked from the staged site
    done = Indexed()
    merged: set[str] = set()
    for group in layout.seal:
        name = sealed_bundle((m.token for m in group), engine())
        if _index(name, name, group, (ledger, writer, pages), done.findings):
            done.sealed[name] = tuple(m.token for m in group)
            merged.update(layout.merged)
    for name, tokens in layout.kept.items():
        if name not in merged and ledger.reuse(unit_of(name), name) is not None:
            done.sealed[name] = tokens
    if layout.fresh:
        key = digest(engine(), *(f"{m.url}={ledger.units[m.url].key}" for m in layout.fresh
                                 if m.url in ledger.units))
        done.fresh = (ledger.reuse(unit_of(FRESH), key) is not None
                      or _index(FRESH, key, layout.fresh, (ledger, writer, pages),
                                done.findings))
    pages.keep_copies(layout.fresh if done.fresh else ())
    writer.write([Output(urls.SEARCH_BUNDLES, manifest(done, members, config))])
    return done


def manifest(done: Indexed, members: Sequence[Member], config: Config) -> bytes:
    """The search page's bundles.json: where the bundles to merge are (the first one's
    code runs the search: the fresh one's when there is one) and the stale entries of
    the sealed ones."""
    names = ([FRESH] if done.fresh else []) + sorted(done.sealed)
    return orjson.dumps({"bundles": [urls.href(config, unit_of(n)) for n in names],
                         "stale": stale_tokens(done.sealed, members)})


def _index(name: str, key: str, group: Sequence[Member],
           using: tuple[Ledger, SiteWriter, Pages], findings: list[Finding]) -> bool:
    """Index one bundle into the staged site and record it (False, with a finding, when
    Pagefind failed: the site is published without it)."""
    ledger, writer, pages = using
    unit = unit_of(name)
    writer.clear(unit)
    target = writer.path / urls.relative_file(unit).rpartition("/")[0]
    out = writer.out_dir
    scratch = out.parent / f"{staging_prefix(out)}search-{uuid.uuid4().hex[:12]}"
    try:
        _link_pages(scratch, pages, group)
        problem = run_pagefind(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if problem is not None or not target.is_dir():
        findings.append(Finding(str(writer.out_dir), "", "search",
                                f"search index not built: {problem or 'no output'}",
                                severity="warning"))
        shutil.rmtree(target, ignore_errors=True)
        return False
    files = _bundle_files(target, writer.path)
    writer.adopt(files, sum((writer.path / f).stat().st_size for f in files))
    ledger.record_files(unit, key, files)
    return True


def _link_pages(scratch: Path, pages: Pages, group: Sequence[Member]) -> None:
    """A folder of the story pages at their site paths (hard links where they can be)."""
    scratch.mkdir()
    (scratch / MARKER).write_bytes(b"desk search scratch folder; desk may remove it.\n")
    for member in group:
        target = scratch / urls.relative_file(member.url)
        target.parent.mkdir(parents=True, exist_ok=True)
        pages.place(member, target)


def run_pagefind(site: Path, output: Path) -> str | None:
    """Run Pagefind over a folder of story pages (None: done; else what went wrong)."""
    try:
        result = subprocess.run([sys.executable, "-m", "pagefind", "--site", str(site),
                                 "--output-path", str(output), "--silent"],
                                capture_output=True, text=True, timeout=_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if result.returncode != 0:
        reason = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["failed"]
        return reason[0]
    return None


def _bundle_files(folder: Path, site: Path) -> tuple[str, ...]:
    """A bundle's files, relative to the site, without the interfaces desk does not use."""
    files = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.name.startswith(_UNUSED):
            path.unlink()
        else:
            files.append(path.relative_to(site).as_posix())
    return tuple(files)
