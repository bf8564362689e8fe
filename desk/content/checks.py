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
from operator import attrgetter

from desk import urls
from desk.config import Config
from desk.content.findings import Finding, Severity
from desk.content.history import UrlHistory
from desk.content.loader import LoadedStory, LoadedWithdrawal
from desk.content.models import REUSE_FIELDS, Cite, Story, is_local

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
IMAGE_ALT_MISSING = "image-alt-missing"
IMAGE_CREDIT_MISSING = "image-credit-missing"
REVIEW_MISSING = "review-missing"
LEAD_IMAGE_NARROW = "lead-image-narrow"
# Google Discover shows a story's picture large only when it is at least this wide.
LEAD_MIN_WIDTH = 1200


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
AcrossRun = Callable[[Sequence[LoadedStory], Config], list[Finding]]
WithdrawalRule = Callable[[Sequence[LoadedWithdrawal], Sequence[LoadedStory], UrlHistory],
                          Iterator[Finding]]


def check_story(path: str, story: Story, config: Config) -> list[Finding]:
    """The findings of one story on its own, rule by rule."""
    return [Finding(path, p.pointer, p.code, p.message, p.severity)
            for rule in STORY_RULES for p in rule(story, config)]


def check_across(stories: Sequence[LoadedStory], config: Config) -> list[Finding]:
    """The findings that need every story, rule by rule."""
    return [finding for rule in ACROSS_RULES for finding in rule(stories, config)]


class AcrossChecks:
    """The findings of `check_across` kept between builds of a long-running process
    (desk serve) and brought up to date for the stories that changed only.

    Each rule across stories but one sees groups that never affect each other (stories
    of one URL, of one id, of one newsroom): only the groups a changed story leaves or
    joins are checked again, with the rule itself. Related links are resolved once per
    version of a story, and checked again when the story changes or a story at a URL
    they lead to comes or goes. The findings are those of `check_across` on the same
    stories, in the same order within each file.
    """

    def __init__(self) -> None:
        self._start(None)

    def _start(self, config: Config | None) -> None:
        """Forget every story (another config may find otherwise)."""
        self._config = config
        self._known: dict[str, LoadedStory] = {}  # by file path
        # Per grouped rule: group → the paths in it, and the group's findings.
        self._members: list[dict[str, set[str]]] = [{} for _ in _GROUPED]
        self._found: list[dict[str, list[Finding]]] = [{} for _ in _GROUPED]
        self._urls: dict[str, int] = {}  # how many stories have each URL path
        # path → its internal links (tuples of strings: the collector stops walking them)
        self._links: dict[str, tuple[tuple[int, str, str], ...]] = {}
        self._related: dict[str, list[Finding]] = {}  # path → its related-missing findings

    def check(self, stories: Sequence[LoadedStory], config: Config) -> list[Finding]:
        """The findings `check_across(stories, config)` gives."""
        if config != self._config:
            self._start(config)
        current = {item.path: item for item in stories}
        known = self._known
        # Most stories are the very ones of the last check: only the others are compared.
        changed = [path for path, item in current.items()
                   if known.get(path) is not item and not _same(item, known.get(path))]
        changed += [path for path in known.keys() - current.keys()]
        old = self._known
        self._known = current
        order = {item.path: i for i, item in enumerate(stories)}
        changes = [(old.get(p), current.get(p)) for p in changed]
        for n in range(len(_GROUPED)):
            self._regroup(n, changes, order, config)
        self._relink(changed, old, config)
        kept = {rule: [f for group in self._found[n].values() for f in group]
                for n, (rule, _) in enumerate(_GROUPED)}
        kept[related_resolve] = [f for item in stories for f in self._related.get(item.path, ())]
        # In check_across's order; a rule not kept up to date (reuse terms) runs whole.
        return [finding for rule in ACROSS_RULES
                for finding in (kept[rule] if rule in kept else rule(stories, config))]

    def _regroup(self, n: int, changes: list[tuple[LoadedStory | None, LoadedStory | None]],
                 order: dict[str, int], config: Config) -> None:
        """Check again the groups of grouped rule `n` that a changed story left or joined."""
        rule, group_of = _GROUPED[n]
        members, found = self._members[n], self._found[n]
        touched: set[str] = set()
        for before, after in changes:
            if before is not None:
                members[group_of(before)].discard(before.path)
                touched.add(group_of(before))
            if after is not None:
                members.setdefault(group_of(after), set()).add(after.path)
                touched.add(group_of(after))
        for group in touched:
            paths = members.get(group)
            if not paths:
                members.pop(group, None)
                found.pop(group, None)
                continue
            if len(paths) == 1:  # what a grouped rule finds, it finds between stories
                found.pop(group, None)  # (most groups, and all at the first check)
                continue
            items = [self._known[p] for p in sorted(paths, key=order.__getitem__)]
            found[group] = list(rule(items, config))

    def _relink(self, changed: list[str], old: dict[str, LoadedStory], config: Config) -> None:
        """Bring the related-missing findings up to date: the changed stories', and those
        of every story linking to a URL path that came or went with them (a pass over the
        links kept, as such a change is rare: an edit in place brings none)."""
        touched = {item.url_path for p in changed
                   for item in (old.get(p), self._known.get(p)) if item is not None}
        existed = {url: url in self._urls for url in touched}
        for path in changed:
            before, after = old.get(path), self._known.get(path)
            if before is not None:
                self._count(before.url_path, -1)
                self._links.pop(path, None)
            if after is not None:
                self._count(after.url_path, 1)
                self._links[path] = tuple(_internal_links(after, config))
        came_or_went = {url for url, was in existed.items() if (url in self._urls) != was}
        recheck = set(changed)
        if came_or_went:
            recheck.update(path for path, links in self._links.items()
                           if any(target in came_or_went for _, _, target in links))
        for path in recheck:
            item = self._known.get(path)
            self._related.pop(path, None)
            if item is None:
                continue
            missing = [_related_missing(path, i, url)
                       for i, url, target in self._links[path] if target not in self._urls]
            if missing:
                self._related[path] = missing

    def _count(self, url: str, step: int) -> None:
        count = self._urls.get(url, 0) + step
        if count:
            self._urls[url] = count
        else:
            del self._urls[url]


@dataclass(frozen=True)
class KeptChecks:
    """How a build checks across stories: the stories, and the stories with the drafts
    shown (each `check_across`, or an AcrossChecks of its own kept between builds)."""

    stories: AcrossRun
    shown: AcrossRun

    @classmethod
    def kept(cls) -> KeptChecks:
        """Checks kept up to date between builds."""
        return cls(AcrossChecks().check, AcrossChecks().check)


def _same(a: LoadedStory | None, b: LoadedStory | None) -> bool:
    return a is b or (a is not None and b is not None and a == b)


def _internal_links(item: LoadedStory, config: Config) -> Iterator[tuple[int, str, str]]:
    """A story's related links to this site's stories: (index, URL, site path)."""
    links = item.summary.related_urls
    for i, (url, path) in enumerate(zip(links, urls.internal_story_paths(
            links, config, item.summary.url), strict=True)):
        if path is not None:
            yield i, url, path


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


def images_described(story: Story, config: Config) -> Iterator[Problem]:
    """Every image has alt text (readers who cannot see it) and a credit (a picture's
    licence usually asks for one)."""
    for i, image in enumerate(story.images):
        if not image.alt.strip():
            yield Problem(f"/images/{i}/alt", IMAGE_ALT_MISSING,
                          "has no alt text: readers who cannot see the picture get nothing",
                          "warning")
        if not image.credit.strip():
            yield Problem(f"/images/{i}/credit", IMAGE_CREDIT_MISSING,
                          "has no credit: whose picture it is goes unsaid", "warning")


def reviewed(story: Story, config: Config) -> Iterator[Problem]:
    """A site that publishes only what a person reviewed (publish_unreviewed = false)
    refuses a story without a review record."""
    if story.review is None and not config.publish_unreviewed:
        yield Problem("/review", REVIEW_MISSING,
                      "no person reviewed this story, and this site publishes only reviewed "
                      "stories (publish_unreviewed = false): add a review record, "
                      '{"by": "NAME", "at": "DATETIME"}')


def lead_wide_enough(story: Story, config: Config) -> Iterator[Problem]:
    """A lead picture of an http(s) URL whose stated width is under LEAD_MIN_WIDTH (a file's
    width is read from its bytes: desk.content.media.media_findings)."""
    if story.images and not is_local(story.images[0].url):
        width = story.images[0].width
        if width is not None and width < LEAD_MIN_WIDTH:
            yield narrow_lead(width)


def narrow_lead(width: int) -> Problem:
    """The warning of a lead picture `width` pixels wide."""
    return Problem("/images/0", LEAD_IMAGE_NARROW,
                   f"the lead picture is {width:,} pixels wide: search engines show a "
                   f"picture large (Google Discover) only from {LEAD_MIN_WIDTH:,}", "warning")


_URL_PATH = attrgetter("url_path")
_ID = attrgetter("summary.id")
_TITLED = attrgetter("summary.newsroom", "summary.newsroom_title")
_NEWEST = attrgetter("summary.published_at", "summary.id")


def unique_urls(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """Two stories at one URL: the second (in path order) is an error."""
    if len(set(map(_URL_PATH, stories))) == len(stories):
        return  # no two alike: told in C, as for every story of the archive on each build
    first_at: dict[str, LoadedStory] = {}
    for item in stories:
        other = first_at.setdefault(item.url_path, item)
        if other is not item:
            yield Finding(item.path, "/slug", DUPLICATE_URL,
                          f"{item.url_path} is also the URL of {other.path}")


def unique_ids(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """Two stories with one id: the second (in path order) is an error."""
    if len(set(map(_ID, stories))) == len(stories):
        return  # no two alike (see unique_urls)
    first_with_id: dict[str, LoadedStory] = {}
    for item in stories:
        other = first_with_id.setdefault(item.summary.id, item)
        if other is not item:
            yield Finding(item.path, "/id", DUPLICATE_ID,
                          f"id {item.summary.id!r} is also the id of {other.path}")


def related_resolve(stories: Sequence[LoadedStory], config: Config) -> Iterator[Finding]:
    """Related links to this site's stories lead to stories in the content."""
    known_paths = {item.url_path for item in stories}
    # A link that names a story of the content as written leads there: only the others
    # are parsed (a build checks every story's links: 400,000 at 100,000 stories).
    read = urls.story_links_reader(config, known_paths)
    written = urls.written_story_links(config, known_paths)
    for item in stories:
        if not item.summary.related_urls or written.issuperset(item.summary.related_urls):
            continue
        for i, url in enumerate(item.summary.related_urls):
            if read is not None and read(url) in known_paths:
                continue
            path = urls.internal_story_path(url, config, item.summary.url)
            if path is not None and path not in known_paths:
                yield _related_missing(item.path, i, url)


def _related_missing(path: str, index: int, url: str) -> Finding:
    return Finding(path, f"/related/{index}/url", RELATED_MISSING,
                   f"{url} points at a story that is not in the content", severity="warning")


def newsroom_titles_agree(stories: Sequence[LoadedStory], config: Config
                          ) -> Iterator[Finding]:
    """Stories of one newsroom that carry different newsroom_titles: a warning for each
    title that loses, naming both files and both titles. The newest story's title wins
    (catalog.newsroom_title reads the stories newest first)."""
    titled = {pair for pair in map(_TITLED, stories) if pair[1]}
    if len(titled) == len({newsroom for newsroom, _ in titled}):
        return  # one title a newsroom: nothing differs (told without sorting the archive)
    winners: dict[str, LoadedStory] = {}
    reported: set[tuple[str, str]] = set()
    newest_first = sorted(stories, key=_NEWEST, reverse=True)
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
    images_described,
    lead_wide_enough,
    reuse_matches_site,
    reviewed,
)

ACROSS_RULES: tuple[AcrossRule, ...] = (
    unique_urls,
    unique_ids,
    related_resolve,
    newsroom_titles_agree,
    reuse_terms_stated,
)

# The rules across stories whose findings stay within groups of stories, each with
# what groups it (AcrossChecks keeps them up to date group by group). Each finds what
# differs between stories of a group: nothing in a group of one.
_GROUPED: tuple[tuple[AcrossRule, Callable[[LoadedStory], str]], ...] = (
    (unique_urls, lambda item: item.url_path),
    (unique_ids, lambda item: item.summary.id),
    (newsroom_titles_agree, lambda item: item.summary.newsroom),
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
