"""The provenance gate: what each story promises about its citations, verified.

Each check has a stable code. Errors stop `desk build`; warnings are reported.
The loader already reports syntax, schema, path-segment, unknown-key, URL-layout and
duplicate-URL findings; these checks need valid models.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from desk import urls
from desk.config import Config
from desk.findings import Finding, sort_findings
from desk.loader import LoadedStory, layout_warnings, load_story_file, story_files, url_collisions
from desk.models import Cite, Story
from desk.parallel import map_forked

# The reuse fields that state terms (the URL fields are the layout's business).
REUSE_FIELDS = ("version", "summary", "attribution", "link_rule", "keep_ids_rule",
                "no_endorsement")


class ParseMemory(Protocol):
    """Remembers each file's inspection while its stat signature is unchanged."""

    def signature(self, path: str) -> Any: ...
    def recall(self, path: str, signature: Any) -> Inspected | None: ...
    def remember(self, path: str, signature: Any, result: Inspected) -> None: ...


Inspected = tuple[LoadedStory | None, tuple[Finding, ...]]


def inspect_content(
    config: Config,
    memory: ParseMemory | None = None,
    jobs: int = 1,
) -> tuple[LoadResult, list[Finding]]:
    """Load the content and check it: what `desk check` prints and `desk build` gates on.

    Each file is inspected on its own (parsed, validated, checked) — by `jobs` forked
    processes when there are many — unless `memory` knows it unchanged; then the checks
    across stories run. Returns the load result and every finding, errors first.
    """
    findings: list[Finding] = []
    content = config.content_dir
    if not content.is_dir():
        findings.append(Finding(str(content), "", "content-missing",
                                "content folder not found"))
        return LoadResult((), tuple(findings)), findings
    paths = story_files(content, findings)
    results: dict[str, Inspected] = {}
    todo: list[tuple[str, Any]] = []
    for path in paths:
        signature = memory.signature(path) if memory is not None else None
        recalled = memory.recall(path, signature) if memory is not None else None
        if recalled is None:
            todo.append((path, signature))
        else:
            results[path] = recalled
    fresh = map_forked(partial(inspect_file, config=config), [p for p, _ in todo],
                       jobs if len(todo) >= PARALLEL_MIN_FILES else 1)
    for (path, signature), result in zip(todo, fresh, strict=True):
        results[path] = result
        if memory is not None:
            memory.remember(path, signature, result)
    loaded: list[LoadedStory] = []
    for path in paths:
        item, own = results[path]
        findings.extend(own)
        if item is not None:
            loaded.append(item)
    findings += url_collisions(loaded)
    findings += cross_story_findings(loaded, config)
    findings += newsroom_title_conflicts(loaded)
    findings += reuse_terms_missing(config)
    return LoadResult(tuple(loaded), tuple(findings)), sort_findings(findings)


# Below this many files to parse, forking costs more than it saves.
PARALLEL_MIN_FILES = 200


@dataclass(frozen=True)
class LoadResult:
    """Every valid story (in path order) and every finding."""

    stories: tuple[LoadedStory, ...]
    findings: tuple[Finding, ...]


def inspect_file(path: str, config: Config) -> Inspected:
    """One file: parsed, validated and checked on its own (nothing across stories)."""
    findings: list[Finding] = []
    loaded = load_story_file(Path(path), findings)
    if loaded is None:
        return None, tuple(findings)
    story, sha256 = loaded
    shown = path
    findings += layout_warnings(shown, story, config)
    findings += check_story(shown, story, config)
    return LoadedStory.of(shown, story, sha256), tuple(findings)


def cross_story_findings(stories: list[LoadedStory], config: Config) -> list[Finding]:
    """The checks that need every story: duplicate ids and related links that lead nowhere."""
    findings: list[Finding] = []
    first_with_id: dict[str, LoadedStory] = {}
    known_paths = {item.url_path for item in stories}
    for item in stories:
        other = first_with_id.setdefault(item.summary.id, item)
        if other is not item:
            findings.append(Finding(item.path, "/id", "duplicate-id",
                                    f"id {item.summary.id!r} is also the id of {other.path}"))
        for i, (url, _) in enumerate(item.summary.related):
            path = urls.internal_story_path(url, config, item.summary.url)
            if path is not None and path not in known_paths:
                findings.append(Finding(item.path, f"/related/{i}/url", "related-missing",
                                        f"{url} points at a story that is not in the content",
                                        severity="warning"))
    return findings


def check_story(path: str, story: Story, config: Config) -> list[Finding]:
    """The findings of one story on its own."""
    out: list[Finding] = []

    def error(pointer: str, code: str, message: str) -> None:
        out.append(Finding(path, pointer, code, message))

    def warning(pointer: str, code: str, message: str) -> None:
        out.append(Finding(path, pointer, code, message, severity="warning"))

    listed = {m.manifest_id for m in story.manifests}
    cited: dict[str, None] = {}
    for pointer, cites in _cited_blocks(story):
        if not cites:
            warning(pointer, "uncited-text", "has no citation")
        for i, cite in enumerate(cites):
            cite_pointer = f"{pointer}/cites/{i}"
            cited[cite.manifest_id] = None
            if cite.manifest_id not in listed:
                error(cite_pointer + "/manifest_id", "unknown-manifest",
                      f"manifest {cite.manifest_id!r} is not in /manifests")
            if not cite.claim_ids:
                error(cite_pointer + "/claim_ids", "empty-claims",
                      "cites a manifest but no claim ids")

    if set(story.cited_manifest_ids) != set(cited):
        error("/cited_manifest_ids", "cited-ids-mismatch",
              f"lists {_ids(story.cited_manifest_ids)} but the story cites {_ids(cited)}")

    for i, manifest in enumerate(story.manifests):
        if manifest.manifest_id not in cited:
            warning(f"/manifests/{i}", "uncited-manifest",
                    f"manifest {manifest.manifest_id!r} is listed but never cited")

    gap = abs(story.published_at - edition_start(story.edition))
    if gap > timedelta(hours=config.edition_gap_hours):
        error("/edition", "edition-gap",
              f"edition {story.edition} is {gap.total_seconds() / 3600:.1f} h away from "
              f"published_at (at most {config.edition_gap_hours:g} h)")

    if story.source_count is not None and story.source_count != len(story.sources):
        warning("/source_count", "source-count",
                f"is {story.source_count} but /sources has {len(story.sources)}")
    distinct = len(set(story.sources))
    if story.distinct_source_count is not None and story.distinct_source_count != distinct:
        warning("/distinct_source_count", "source-count",
                f"is {story.distinct_source_count} but /sources has {distinct} distinct")

    run = story.run_these_manifests
    if run is not None and run.manifest_ids and set(run.manifest_ids) != set(
        story.cited_manifest_ids
    ):
        warning("/run_these_manifests/manifest_ids", "run-manifests-mismatch",
                f"lists {_ids(run.manifest_ids)} but /cited_manifest_ids is "
                f"{_ids(story.cited_manifest_ids)}")

    if story.reuse is not None and config.reuse:
        given = story.reuse.model_fields_set
        differing = [key for key in REUSE_FIELDS if key in config.reuse and key in given
                     and getattr(story.reuse, key) != config.reuse[key]]
        if differing:
            warning("/reuse", "reuse-differs",
                    f"differs from the site's reuse terms in {', '.join(differing)}")

    return out


def _cited_blocks(story: Story) -> Iterator[tuple[str, tuple[Cite, ...]]]:
    for i, fact in enumerate(story.key_facts):
        yield f"/key_facts/{i}", fact.cites
    for si, section in enumerate(story.sections):
        for pi, paragraph in enumerate(section.paragraphs):
            yield f"/sections/{si}/paragraphs/{pi}", paragraph.cites


def edition_start(edition: str) -> datetime:
    """The UTC hour an edition id names."""
    return datetime.fromisoformat(edition + ":00:00+00:00")


def _ids(ids: object) -> str:
    assert isinstance(ids, tuple | dict | set)
    return "[" + ", ".join(sorted(ids)) + "]"


def newsroom_title_conflicts(stories: list[LoadedStory]) -> list[Finding]:
    """Stories of one newsroom that carry different newsroom_titles: a warning for each
    title that loses, naming both files and both titles. The newest story's title wins
    (catalog.newsroom_title reads the stories newest first)."""
    winners: dict[str, LoadedStory] = {}
    reported: set[tuple[str, str]] = set()
    findings: list[Finding] = []
    newest_first = sorted(stories, key=lambda s: (s.summary.published_at, s.summary.id),
                          reverse=True)
    for item in newest_first:
        story = item.summary
        if not story.newsroom_title:
            continue
        winner = winners.setdefault(story.newsroom, item)
        title = winner.summary.newsroom_title
        if story.newsroom_title != title and (story.newsroom, story.newsroom_title) not in reported:
            reported.add((story.newsroom, story.newsroom_title))
            findings.append(Finding(
                item.path, "/newsroom_title", "newsroom-title-conflict",
                f"{story.newsroom_title!r} differs from {title!r} in {winner.path}, another "
                f"story of newsroom {story.newsroom!r}; the newest story's title is used",
                severity="warning"))
    return findings


def reuse_terms_missing(config: Config) -> list[Finding]:
    """A warning when the configuration states no reuse terms: /terms/reuse/ and
    /.well-known/reuse.json would say almost nothing while stories carry their own."""
    if any(config.reuse.get(key) for key in REUSE_FIELDS):
        return []
    return [Finding("[tool.desk.reuse]", "", "reuse-terms-missing",
                    "the configuration states no reuse terms, so /terms/reuse/ and "
                    "/.well-known/reuse.json say none (each story's index.json keeps its "
                    "own): add the table to pyproject.toml", severity="warning")]
