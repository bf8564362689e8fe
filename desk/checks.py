"""The provenance gate: what each story promises about its citations, verified.

Checks are small rules in three lists, run in order: `STORY_RULES` see one valid story,
`ACROSS_RULES` see every loaded story, `WITHDRAWAL_RULES` see the withdrawal files with
the stories and the URL history. Each rule yields findings with a code from the
constants below. Errors stop `desk build`; warnings are reported. The loader reports
syntax, schema, path-segment, unknown-key and URL-layout findings before these run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from desk import urls
from desk.config import Config
from desk.findings import Finding, Severity
from desk.history import UrlHistory
from desk.loader import LoadedStory, LoadedWithdrawal
from desk.models import REUSE_FIELDS, Cite, Story

UNCITED_TEXT = "uncited-text"
UNKNOWN_MANIFEST = "unknown-manifest"
EMPTY_CLAIMS = "empty-claims"
CITED_IDS_MISMATCH = "cited-ids-mismatch"
UNCITED_MANIFEST = "uncited-manifest"
EDITION_GAP = "edition-gap"
SOURCE_COUNT = "source-count"
RUN_MANIFESTS_MISMATCH = "run-manifests-mismatch"
REUSE_DIFFERS = "reuse-differs"
DUPLICATE_URL = "duplicate-url"
DUPLICATE_ID = "duplicate-id"
RELATED_MISSING = "related-missing"
NEWSROOM_TITLE_CONFLICT = "newsroom-title-conflict"
REUSE_TERMS_MISSING = "reuse-terms-missing"


WITHDRAWN_UNKNOWN = "withdrawn-unknown"
DUPLICATE_WITHDRAWAL = "duplicate-withdrawal"


@dataclass(frozen=True)
class Problem:
    """What a story rule found, before it is tied to a file."""

    pointer: str
    code: str
    message: str
    severity: Severity = "error"


StoryRule = Callable[[Story, Config], Iterator[Problem]]
AcrossRule = Callable[[Sequence[LoadedStory], Config], Iterator[Finding]]
WithdrawalRule = Callable[[Sequence[LoadedWithdrawal], Sequence[LoadedStory], UrlHistory],
                          Iterator[Finding]]


def check_story(path: str, story: Story, config: Config) -> list[Finding]:
    """The findings of one story on its own, rule by rule."""
    return [Finding(path, p.pointer, p.code, p.message, p.severity)
            for rule in STORY_RULES for p in rule(story, config)]


def check_across(stories: Sequence[LoadedStory], config: Config) -> list[Finding]:
    """The findings that need every story, rule by rule."""
    return [finding for rule in ACROSS_RULES for finding in rule(stories, config)]


def check_withdrawals(withdrawals: Sequence[LoadedWithdrawal], stories: Sequence[LoadedStory],
                      history: UrlHistory) -> list[Finding]:
    """The findings of the withdrawal files, rule by rule (`stories`: every story and draft
    in the content)."""
    return [finding for rule in WITHDRAWAL_RULES
            for finding in rule(withdrawals, stories, history)]


def citations(story: Story, config: Config) -> Iterator[Problem]:
    """Every key fact and paragraph cites a listed manifest, naming claims."""
    listed = {m.manifest_id for m in story.manifests}
    for pointer, cites in _cited_blocks(story):
        if not cites:
            yield Problem(pointer, UNCITED_TEXT, "has no citation", "warning")
        for i, cite in enumerate(cites):
            where = f"{pointer}/cites/{i}"
            if cite.manifest_id not in listed:
                yield Problem(where + "/manifest_id", UNKNOWN_MANIFEST,
                              f"manifest {cite.manifest_id!r} is not in /manifests")
            if not cite.claim_ids:
                yield Problem(where + "/claim_ids", EMPTY_CLAIMS,
                              "cites a manifest but no claim ids")


def cited_ids_match(story: Story, config: Config) -> Iterator[Problem]:
    """/cited_manifest_ids lists exactly the manifests the text cites."""
    cited = _cited_ids(story)
    if set(story.cited_manifest_ids) != set(cited):
        yield Problem("/cited_manifest_ids", CITED_IDS_MISMATCH,
                      f"lists {_ids(story.cited_manifest_ids)} but the story cites "
                      f"{_ids(cited)}")


def manifests_cited(story: Story, config: Config) -> Iterator[Problem]:
    """Every listed manifest is cited somewhere."""
    cited = _cited_ids(story)
    for i, manifest in enumerate(story.manifests):
        if manifest.manifest_id not in cited:
            yield Problem(f"/manifests/{i}", UNCITED_MANIFEST,
                          f"manifest {manifest.manifest_id!r} is listed but never cited",
                          "warning")


def edition_near_publication(story: Story, config: Config) -> Iterator[Problem]:
    """The edition hour is near the publication time."""
    gap = abs(story.published_at - edition_start(story.edition))
    if gap > timedelta(hours=config.edition_gap_hours):
        yield Problem("/edition", EDITION_GAP,
                      f"edition {story.edition} is {gap.total_seconds() / 3600:.1f} h away "
                      f"from published_at (at most {config.edition_gap_hours:g} h)")


def source_counts(story: Story, config: Config) -> Iterator[Problem]:
    """The stated source counts agree with /sources."""
    if story.source_count is not None and story.source_count != len(story.sources):
        yield Problem("/source_count", SOURCE_COUNT,
                      f"is {story.source_count} but /sources has {len(story.sources)}",
                      "warning")
    distinct = len(set(story.sources))
    if story.distinct_source_count is not None and story.distinct_source_count != distinct:
        yield Problem("/distinct_source_count", SOURCE_COUNT,
                      f"is {story.distinct_source_count} but /sources has {distinct} "
                      "distinct", "warning")


def run_manifests_match(story: Story, config: Config) -> Iterator[Problem]:
    """The manifests to run again are the ones the story cites."""
    run = story.run_these_manifests
    if run is not None and run.manifest_ids and set(run.manifest_ids) != set(
            story.cited_manifest_ids):
        yield Problem("/run_these_manifests/manifest_ids", RUN_MANIFESTS_MISMATCH,
                      f"lists {_ids(run.manifest_ids)} but /cited_manifest_ids is "
                      f"{_ids(story.cited_manifest_ids)}", "warning")


def reuse_matches_site(story: Story, config: Config) -> Iterator[Problem]:
    """A story's own reuse terms agree with the site's."""
    if story.reuse is None or not config.reuse:
        return
    given = story.reuse.model_fields_set
    differing = [key for key in REUSE_FIELDS if key in config.reuse and key in given
                 and getattr(story.reuse, key) != config.reuse[key]]
    if differing:
        yield Problem("/reuse", REUSE_DIFFERS,
                      f"differs from the site's reuse terms in {', '.join(differing)}",
                      "warning")


def unique_urls(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """Two stories at one URL: the second (in path order) is an error."""
    first_at: dict[str, LoadedStory] = {}
    for item in stories:
        other = first_at.setdefault(item.url_path, item)
        if other is not item:
            yield Finding(item.path, "/slug", DUPLICATE_URL,
                          f"{item.url_path} is also the URL of {other.path}")


def unique_ids(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """Two stories with one id: the second (in path order) is an error."""
    first_with_id: dict[str, LoadedStory] = {}
    for item in stories:
        other = first_with_id.setdefault(item.summary.id, item)
        if other is not item:
            yield Finding(item.path, "/id", DUPLICATE_ID,
                          f"id {item.summary.id!r} is also the id of {other.path}")


def related_resolve(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """Related links to this site's stories lead to stories in the content."""
    known_paths = {item.url_path for item in stories}
    for item in stories:
        for i, (url, _) in enumerate(item.summary.related):
            path = urls.internal_story_path(url, config, item.summary.url)
            if path is not None and path not in known_paths:
                yield Finding(item.path, f"/related/{i}/url", RELATED_MISSING,
                              f"{url} points at a story that is not in the content",
                              severity="warning")


def newsroom_titles_agree(stories: Sequence[LoadedStory], config: Config
                          ) -> Iterator[Finding]:
    """Stories of one newsroom that carry different newsroom_titles: a warning for each
    title that loses, naming both files and both titles. The newest story's title wins
    (catalog.newsroom_title reads the stories newest first)."""
    winners: dict[str, LoadedStory] = {}
    reported: set[tuple[str, str]] = set()
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
            yield Finding(
                item.path, "/newsroom_title", NEWSROOM_TITLE_CONFLICT,
                f"{story.newsroom_title!r} differs from {title!r} in {winner.path}, another "
                f"story of newsroom {story.newsroom!r}; the newest story's title is used",
                severity="warning")


def reuse_terms_stated(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """A warning when the configuration states no reuse terms: /terms/reuse/ and
    /.well-known/reuse.json would say almost nothing while stories carry their own."""
    if not any(config.reuse.get(key) for key in REUSE_FIELDS):
        yield Finding("[tool.desk.reuse]", "", REUSE_TERMS_MISSING,
                      "the configuration states no reuse terms, so /terms/reuse/ and "
                      "/.well-known/reuse.json say none (each story's index.json keeps its "
                      "own): add the table to the settings", severity="warning")


def withdrawn_known(withdrawals: Sequence[LoadedWithdrawal], stories: Sequence[LoadedStory],
                    history: UrlHistory) -> Iterator[Finding]:
    """A withdrawal names a story of the content or one the URL history knows."""
    known = {item.summary.id for item in stories}
    for item in withdrawals:
        if item.id not in known and item.id not in history.urls:
            yield Finding(item.path, "/id", WITHDRAWN_UNKNOWN,
                          f"no story has id {item.id!r}: none in the content, and none "
                          "was ever published under it")


def withdrawn_once(withdrawals: Sequence[LoadedWithdrawal], stories: Sequence[LoadedStory],
                   history: UrlHistory) -> Iterator[Finding]:
    """One withdrawal file per story: the second (in path order) is an error."""
    first_for: dict[str, LoadedWithdrawal] = {}
    for item in withdrawals:
        other = first_for.setdefault(item.id, item)
        if other is not item:
            yield Finding(item.path, "/id", DUPLICATE_WITHDRAWAL,
                          f"story {item.id!r} is also withdrawn by {other.path}")


STORY_RULES: tuple[StoryRule, ...] = (
    citations,
    cited_ids_match,
    manifests_cited,
    edition_near_publication,
    source_counts,
    run_manifests_match,
    reuse_matches_site,
)

ACROSS_RULES: tuple[AcrossRule, ...] = (
    unique_urls,
    unique_ids,
    related_resolve,
    newsroom_titles_agree,
    reuse_terms_stated,
)

WITHDRAWAL_RULES: tuple[WithdrawalRule, ...] = (
    withdrawn_known,
    withdrawn_once,
)


def _cited_blocks(story: Story) -> Iterator[tuple[str, tuple[Cite, ...]]]:
    for i, fact in enumerate(story.key_facts):
        yield f"/key_facts/{i}", fact.cites
    for si, section in enumerate(story.sections):
        for pi, paragraph in enumerate(section.paragraphs):
            yield f"/sections/{si}/paragraphs/{pi}", paragraph.cites


def _cited_ids(story: Story) -> dict[str, None]:
    return {cite.manifest_id: None for _, cites in _cited_blocks(story) for cite in cites}


def edition_start(edition: str) -> datetime:
    """The UTC hour an edition id names."""
    return datetime.fromisoformat(edition + ":00:00+00:00")


def _ids(ids: object) -> str:
    assert isinstance(ids, tuple | dict | set)
    return "[" + ", ".join(sorted(ids)) + "]"
