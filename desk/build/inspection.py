"""Inspection: every file of the content loaded and checked, once, for `desk check` and
builds.

Each story and draft file is inspected on its own (parsed, validated, checked by the
story rules) — by forked processes when there are many — unless the inspection cache
knows it unchanged; then the rules across stories run, and the withdrawal files are
read and checked against the stories and the URL history. The drafts' findings are kept
apart: they stop only a build that shows drafts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from desk.build.cache import Inspected, InspectionCache, Session
from desk.build.parallel import map_forked
from desk.build.records import Stat
from desk.config import Config
from desk.content.catalog import Content
from desk.content.checks import KeptChecks, check_across, check_story, check_withdrawals
from desk.content.digests import text_digest
from desk.content.edits import silent_edits
from desk.content.findings import Finding, sort_findings
from desk.content.history import UrlHistory
from desk.content.loader import (
    DRAFTS,
    STORIES,
    WITHDRAWN,
    LoadedStory,
    LoadedWithdrawal,
    ParsedStory,
    content_files,
    layout_warnings,
    load_withdrawal_file,
    parse_story_file,
)
from desk.content.pages import Page, load_pages

# Below this many files to parse, forking costs more than it saves.
PARALLEL_MIN_FILES = 200
# Parsed stories kept for rendering at most (a few changed files; never the archive).
KEEP_PARSED = 500


@dataclass(frozen=True)
class Inspection:
    """Every valid story and draft (each in path order), every valid withdrawal, and the
    findings, errors first: the stories' and withdrawals', and apart the drafts'."""

    stories: tuple[LoadedStory, ...]
    findings: tuple[Finding, ...]
    # The files this process parsed, by path, so their pages need not parse them again.
    parsed: Mapping[str, ParsedStory] = field(default_factory=dict)
    drafts: tuple[LoadedStory, ...] = ()
    draft_findings: tuple[Finding, ...] = ()
    withdrawals: tuple[LoadedWithdrawal, ...] = ()
    # Every story file, valid or not, in path order, and each one's own inspection
    # (nothing across stories): what a build that holds back bad stories sorts by file.
    story_files: tuple[str, ...] = ()
    own: Mapping[str, Inspected] = field(default_factory=dict)
    pages: tuple[Page, ...] = ()
    # The last inspected versions of the stories whose files changed or went since the
    # saved inspections (None: not known).
    replaced: tuple[LoadedStory, ...] | None = None
    # The text digests read to tell silent edits, by path (desk.content.edits.Edits).
    texts: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no finding is an error (the drafts' aside)."""
        return not any(f.is_error for f in self.findings)

    @property
    def content(self) -> Content:
        """The valid files, as the catalog takes them."""
        return Content(self.stories, self.drafts, self.withdrawals, self.pages)


def inspect_content(config: Config, cache: InspectionCache | None = None,
                    jobs: int = 1, history: UrlHistory | None = None,
                    session: Session | None = None) -> Inspection:
    """Load the content and check it: what `desk check` prints and `desk build` gates on
    (`history`: the URL history, which knows the ids of stories no longer in content;
    `session`: what a long-running process keeps, the file lists and the checks across
    stories, brought up to date for the files that changed)."""
    content = config.content_dir
    if not content.is_dir():
        return Inspection((), (Finding(str(content), "", "content-missing",
                                       "content folder not found"),))
    findings: list[Finding] = []
    draft_findings: list[Finding] = []
    walk = cache.files if cache is not None else content_files
    listed = (partial(session.listing.files, changed=session.changed, walk=walk)
              if session is not None else walk)
    paths = listed(content, STORIES, findings)
    draft_paths = listed(content, DRAFTS, draft_findings)
    parsed: dict[str, ParsedStory] = {}
    texts: dict[str, tuple[str, str]] = {}  # of the files parsed now (desk.content.edits)
    # A long-running process may serve meanwhile: its workers are forked under its gate.
    results = _inspect_files(paths + draft_paths, config, cache, jobs, (parsed, texts),
                             session.fork_gate if session is not None else None)
    stories = _valid(paths, results, findings)
    drafts = _as_drafts(_valid(draft_paths, results, draft_findings))
    kept = session.across if session is not None else KeptChecks(check_across, check_across)
    findings += kept.stories(stories, config)
    if drafts:  # checked with the stories, so a draft may not take a story's URL or id
        shown = set(draft_paths)
        draft_findings += [f for f in kept.shown(stories + drafts, config) if f.path in shown]
    withdrawals = _withdrawals(content, findings)
    findings += check_withdrawals(withdrawals, stories + drafts, history or UrlHistory())
    edits = silent_edits(stories, history or UrlHistory(), parsed, config)
    findings += edits.findings
    own = _with_edits(results, edits.findings)
    pages = load_pages(content, findings)  # small files: read on every build
    replaced = None if cache is None or cache.replaced is None else tuple(cache.replaced)
    return Inspection(tuple(stories), tuple(sort_findings(findings)), parsed, tuple(drafts),
                      tuple(sort_findings(draft_findings)), withdrawals, tuple(paths), own,
                      pages, replaced, {**texts, **edits.texts})


def _with_edits(results: dict[str, Inspected], edits: Sequence[Finding]
                ) -> Mapping[str, Inspected]:
    """Each file's own inspection, a silent edit counted as its own finding (a build that
    holds back bad stories holds back one that is an error); the cache's are untouched."""
    if not edits:
        return results
    own = dict(results)
    for finding in edits:
        item, found = own[finding.path]
        own[finding.path] = item, (*found, finding)
    return own


def _valid(paths: list[str], results: dict[str, Inspected],
           findings: list[Finding]) -> list[LoadedStory]:
    """The valid stories of some files, in order; their findings added to `findings`."""
    loaded: list[LoadedStory] = []
    for path in paths:
        item, own = results[path]
        findings.extend(own)
        if item is not None:
            loaded.append(item)
    return loaded


def _as_drafts(items: list[LoadedStory]) -> list[LoadedStory]:
    """The valid drafts, each marked as one."""
    return [replace(item, draft=True) for item in items]


def _withdrawals(content: Path, findings: list[Finding]) -> tuple[LoadedWithdrawal, ...]:
    """Every valid withdrawal file, in path order (small files: read on every build)."""
    found = (load_withdrawal_file(Path(path), findings)
             for path in content_files(content, WITHDRAWN, findings))
    return tuple(item for item in found if item is not None)


def _inspect_files(paths: list[str], config: Config, cache: InspectionCache | None,
                   jobs: int,
                   kept: tuple[dict[str, ParsedStory], dict[str, tuple[str, str]]],
                   gate: AbstractContextManager[object] | None = None
                   ) -> dict[str, Inspected]:
    """Each file's inspection: recalled when unchanged, else done (forked when many,
    each worker forked holding `gate`); the stories parsed in this process are kept in
    `kept`'s first when they are few, the text digest of each parsed (with its file's
    digest) in its second, for the record of its publish (never in the saved state)."""
    parsed, texts = kept
    results: dict[str, Inspected] = {}
    todo: list[tuple[str, Stat | None]] = []
    for path in paths:
        known = cache.unchanged(path) if cache is not None else None
        if known is not None:
            results[path] = known
            continue
        stat = cache.stat(path) if cache is not None else None
        recalled = cache.recall(path, stat) if cache is not None else None
        if recalled is None:
            todo.append((path, stat))
        else:
            results[path] = recalled
    workers = jobs if len(todo) >= PARALLEL_MIN_FILES else 1
    keep = parsed if workers == 1 and len(todo) <= KEEP_PARSED else None
    fresh = map_forked(partial(_inspect_told, config=config, keep=keep), [p for p, _ in todo],
                       workers, gate)
    for (path, stat), (result, text) in zip(todo, fresh, strict=True):
        results[path] = result
        if result[0] is not None and text:
            texts[path] = result[0].digest, text
        if cache is not None:
            cache.remember(path, stat, result)
    if cache is not None:
        cache.forget_others(results)
    return results


def inspect_file(path: str, config: Config, keep: dict[str, ParsedStory] | None = None
                 ) -> Inspected:
    """One file: parsed, validated and checked on its own (nothing across stories); the
    parsed story is added to `keep` when given."""
    return _inspect_told(path, config, keep)[0]


def _inspect_told(path: str, config: Config, keep: dict[str, ParsedStory] | None = None
                  ) -> tuple[Inspected, str]:
    """inspect_file, with the text digest of the story parsed ("" when none was)."""
    findings: list[Finding] = []
    parsed = parse_story_file(Path(path), findings)
    if parsed is None:
        return (None, tuple(findings)), ""
    if keep is not None:
        keep[path] = parsed
    story = parsed.story
    findings += layout_warnings(path, story)
    findings += check_story(path, story, config)
    return ((LoadedStory.of(path, story, parsed.digest, parsed.blob), tuple(findings)),
            text_digest(parsed.data))
