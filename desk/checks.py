"""The provenance gate: what each story promises about its citations, verified.

Each check has a stable code. Errors stop `desk build`; warnings are reported.
The loader already reports syntax, schema, path-segment, unknown-key, URL-layout and
duplicate-URL findings; these checks need valid models.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from desk import urls
from desk.config import Config
from desk.findings import Finding, sort_findings
from desk.loader import LoadedStory, LoadResult, ParseMemory, load_content
from desk.models import Cite, Story

# The reuse fields that state terms (the URL fields are the layout's business).
REUSE_FIELDS = ("version", "summary", "attribution", "link_rule", "keep_ids_rule",
                "no_endorsement")


def inspect_content(
    config: Config,
    parse_memory: ParseMemory | None = None,
    memo: dict[str, tuple[str, list[Finding]]] | None = None,
) -> tuple[LoadResult, list[Finding]]:
    """Load the content and check it: what `desk check` prints and `desk build` gates on.

    Returns the load result and every finding, errors first.
    """
    loaded = load_content(config, parse_memory)
    return loaded, sort_findings([*loaded.findings, *check_stories(loaded.stories, config, memo)])


def check_stories(
    stories: tuple[LoadedStory, ...],
    config: Config,
    memo: dict[str, tuple[str, list[Finding]]] | None = None,
) -> list[Finding]:
    """Every provenance finding for every story, in path order.

    `memo` (desk serve's) remembers each story's findings under what they depend on: the
    file's bytes, the configuration and whether its related links lead to a story.
    """
    findings: list[Finding] = []
    first_with_id: dict[str, LoadedStory] = {}
    known_paths = {item.url_path for item in stories}
    settings = config.model_dump_json()
    for item in stories:
        other = first_with_id.setdefault(item.story.id, item)
        if other is not item:
            findings.append(Finding(item.path, "/id", "duplicate-id",
                                    f"id {item.story.id!r} is also the id of {other.path}"))
        if memo is None:
            findings.extend(check_story(item, config, known_paths))
            continue
        related = "".join(
            "1" if urls.internal_story_path(r.url, config, item.story.url) in known_paths
            else "0" for r in item.story.related)
        key = f"{item.digest}|{related}|{settings}"
        known = memo.get(item.path)
        if known is None or known[0] != key:
            known = memo[item.path] = (key, check_story(item, config, known_paths))
        findings.extend(known[1])
    return findings


def check_story(item: LoadedStory, config: Config, known_paths: set[str]) -> list[Finding]:
    """The findings of one story."""
    story = item.story
    out: list[Finding] = []

    def error(pointer: str, code: str, message: str) -> None:
        out.append(Finding(item.path, pointer, code, message))

    def warning(pointer: str, code: str, message: str) -> None:
        out.append(Finding(item.path, pointer, code, message, severity="warning"))

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

    for i, related in enumerate(story.related):
        path = urls.internal_story_path(related.url, config, story.url)
        if path is not None and path not in known_paths:
            warning(f"/related/{i}/url", "related-missing",
                    f"{related.url} points at a story that is not in the content")
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
