"""What a story page shows, computed once for the HTML and Markdown templates.

Templates only lay this out: citation numbers, anchors and every URL are decided here
(URLs through desk.urls), so the HTML and the Markdown can never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup

from desk import urls
from desk.config import Config
from desk.content.catalog import Catalog, beat_title
from desk.content.loader import LoadedStory, story_url_path
from desk.content.media import is_local
from desk.content.models import Cite, Manifest, Story
from desk.content.prose import Prose
from desk.render import changes
from desk.render.disclosure import Disclosure, disclosure_of
from desk.render.pictures import Picture, pictures


@dataclass(frozen=True)
class CiteRef:
    """One citation marker: the source's number and the claims it points to."""

    number: int | None
    manifest_id: str
    claim_ids: tuple[str, ...]

    @property
    def anchor(self) -> str:
        """The id of the source's entry in the sources list."""
        return f"src-{self.number}" if self.number is not None else ""

    @property
    def claim_text(self) -> str:
        """Space-separated claim ids."""
        return " ".join(self.claim_ids)


@dataclass(frozen=True)
class Cited:
    """A key fact or paragraph with its anchor and citations."""

    anchor: str
    text: str
    html: Markup
    cites: tuple[CiteRef, ...]
    self_reported: bool = False

    @property
    def manifest_ids(self) -> str:
        """Space-separated manifest ids, for data-manifest."""
        return " ".join(dict.fromkeys(c.manifest_id for c in self.cites))

    @property
    def claim_ids(self) -> str:
        """Space-separated claim ids, for data-claims."""
        return " ".join(dict.fromkeys(i for c in self.cites for i in c.claim_ids))

    @property
    def markers(self) -> str:
        """Citation markers as plain text: [1][2] ([?] for a manifest not listed)."""
        return "".join(f"[{c.number}]" if c.number else "[?]" for c in self.cites)


@dataclass(frozen=True)
class SectionView:
    anchor: str
    heading: str
    paragraphs: tuple[Cited, ...]


@dataclass(frozen=True)
class SourceView:
    number: int
    manifest: Manifest

    @property
    def anchor(self) -> str:
        """The id of this entry in the sources list."""
        return f"src-{self.number}"


@dataclass(frozen=True)
class RelatedView:
    href: str
    url: str
    headline: str
    internal: bool


@dataclass(frozen=True)
class CorrectionView:
    """One change record: a correction, a clarification, an update or an editor's note."""

    at: datetime
    text: str
    html: Markup
    kind: str = "correction"

    @property
    def label(self) -> str:
        """Its kind in words."""
        return changes.label(self.kind)


@dataclass(frozen=True)
class Step:
    number: int
    title: str
    html: Markup
    text: str


@dataclass(frozen=True)
class StoryView:
    """Everything a story template needs."""

    story: Story
    path: str
    url: str
    json_href: str
    markdown_href: str
    newsroom_title: str
    newsroom_href: str
    edition_href: str
    facts: tuple[Cited, ...]
    sections: tuple[SectionView, ...]
    sources: tuple[SourceView, ...]
    related: tuple[RelatedView, ...]
    corrections: tuple[CorrectionView, ...]
    steps: tuple[Step, ...]
    pictures: tuple[Picture, ...]  # the first is the lead
    modified_at: datetime
    entry_id: str  # in feeds, the same wherever the story moves
    disclosure: Disclosure  # who wrote it, from what, and who reviewed it
    draft: bool = False  # shown in the preview only, marked as a draft
    search_entry: str = ""  # this version at this URL in the search index (desk.search.bundles)
    beat_title: str = ""  # "" when the story has no beat
    beat_href: str = ""
    agent: str = ""  # the writing agent, "" when the story names none
    agent_href: str = ""
    agent_url: str = ""

    @property
    def changes_title(self) -> str:
        """What the list of its change records is called ("Corrections", "Changes")."""
        return changes.heading(c.kind for c in self.corrections)

    @property
    def lead(self) -> Picture | None:
        """The lead picture, shown above the body."""
        return self.pictures[0] if self.pictures else None

    @property
    def has_decision_card(self) -> bool:
        """True when the decision card has any entry."""
        card = self.story.decision_card
        return card is not None and bool(card.useful_for or card.not_for or card.compare_against)


def number_sources(story: Story) -> dict[str, int]:
    """Number manifests in order of first citation, then the uncited ones in list order."""
    order: dict[str, int] = {}
    cites = [c for f in story.key_facts for c in f.cites]
    cites += [c for s in story.sections for p in s.paragraphs for c in p.cites]
    known = {m.manifest_id for m in story.manifests}
    for cite in cites:
        if cite.manifest_id in known and cite.manifest_id not in order:
            order[cite.manifest_id] = len(order) + 1
    for manifest in story.manifests:
        order.setdefault(manifest.manifest_id, len(order) + 1)
    return order


def story_view(story: Story, catalog: Catalog, config: Config, prose: Prose,
               draft: bool = False, search_entry: str = "") -> StoryView:
    """Compute the view of one story (`draft`: a draft shown in the preview;
    `search_entry`: what names this version of it in the search index)."""
    numbers = number_sources(story)

    manifests = {m.manifest_id: m for m in story.manifests}

    def refs(cites: tuple[Cite, ...]) -> tuple[CiteRef, ...]:
        return tuple(CiteRef(numbers.get(c.manifest_id), c.manifest_id, c.claim_ids)
                     for c in cites)

    facts = tuple(
        Cited(fact_anchor(i), fact.text, Markup(""), refs(fact.cites), fact.self_reported)
        for i, fact in enumerate(story.key_facts, start=1)
    )
    sections = tuple(
        SectionView(
            f"s{si}",
            section.heading,
            tuple(
                Cited(f"s{si}p{pi}", p.markdown, prose.block(p.markdown), refs(p.cites))
                for pi, p in enumerate(section.paragraphs, start=1)
            ),
        )
        for si, section in enumerate(story.sections, start=1)
    )
    sources = tuple(
        SourceView(n, manifests[mid]) for mid, n in sorted(numbers.items(), key=lambda x: x[1])
    )
    path = story_url_path(story)
    byline = _byline(story, config)
    return StoryView(
        story=story,
        path=path,
        url=urls.absolute(config, path),
        json_href=urls.href(config, path + "index.json"),
        markdown_href=urls.href(config, path + "index.md"),
        newsroom_title=_newsroom_title(story.newsroom, story.newsroom_title, catalog, config),
        newsroom_href=urls.href(config, urls.newsroom_path(story.newsroom)),
        edition_href=urls.href(config, urls.edition_path(story.edition)),
        facts=facts,
        sections=sections,
        sources=sources,
        related=tuple(_related(tuple((r.url, r.headline) for r in story.related), story.url,
                               catalog, config)),
        corrections=tuple(
            CorrectionView(c.at, c.text, prose.block(c.text), c.kind)
            for c in sorted(story.corrections, key=lambda c: c.at, reverse=True)
        ),
        steps=_steps(story, prose),
        pictures=pictures(story.images, config, catalog.media),
        modified_at=story.modified_at,
        entry_id=urls.entry_id(config, story.id),
        disclosure=disclosure_of(story, len(sources), byline.get("agent_href", ""), config),
        draft=draft,
        search_entry=search_entry,
        **byline,
    )


def fact_anchor(number: int) -> str:
    """The fragment of the key fact numbered `number` (from 1) on its story's page: it
    names the same fact for as long as the facts before it are unchanged."""
    return f"fact-{number}"


def _byline(story: Story, config: Config) -> dict[str, str]:
    """The beat and the writing agent a story page links."""
    found: dict[str, str] = {}
    if story.beat:
        found.update(beat_title=beat_title(story.beat, config), beat_href=urls.href(
            config, urls.beat_path(story.newsroom, story.beat)))
    agent = story.writer.agent if story.writer else ""
    if agent:
        path = urls.agent_path(agent)
        found.update(agent=agent, agent_href=urls.href(config, path),
                     agent_url=urls.absolute(config, path))
    return found


def _steps(story: Story, prose: Prose) -> tuple[Step, ...]:
    """The numbered steps of a story's "run these manifests" block."""
    if story.run_these_manifests is None:
        return ()
    return tuple(
        Step(step.n if step.n is not None else i, step.title, prose.inline(step.text),
             step.text)
        for i, step in enumerate(story.run_these_manifests.steps, start=1)
    )


def _newsroom_title(newsroom: str, own_title: str, catalog: Catalog, config: Config) -> str:
    group = catalog.newsroom_index.get(newsroom)
    if group is not None:
        return group.title
    return own_title or config.newsrooms.get(newsroom) or newsroom


def related_target(url: str, base: str | None, catalog: Catalog, config: Config
                   ) -> LoadedStory | None:
    """The published story a related link leads to (`base`: the linking story's own
    URL), at its new URL if it moved; None: to none."""
    path = urls.internal_story_path(url, config, base)
    if path is None:
        return None
    return catalog.by_path.get(catalog.moved.get(path, path))


def _related(related: tuple[tuple[str, str], ...], base: str | None, catalog: Catalog,
             config: Config) -> list[RelatedView]:
    views = []
    for url, headline in related:
        found = related_target(url, base, catalog, config)
        if found is not None:
            path, target = found.url_path, found.summary
            views.append(RelatedView(urls.href(config, path), urls.absolute(config, path),
                                     headline or target.headline, True))
        else:
            views.append(RelatedView(url, url, headline or url, False))
    return views


def story_page_inputs(item: LoadedStory, catalog: Catalog, config: Config) -> str:
    """What a story page depends on beyond its own file and the templates: whether it is a
    draft, its newsroom's title and where its related links lead."""
    summary = item.summary
    parts = ["draft" if item.draft else "",
             _newsroom_title(summary.newsroom, summary.newsroom_title, catalog, config)]
    for view in _related(summary.related, summary.url, catalog, config):
        parts.append(f"{view.href}|{view.headline}")
    for url in summary.images:  # a local image's name and size come from its bytes
        media = catalog.media.get(url) if is_local(url) else None
        if media is not None:
            parts.append(f"{url}|{media.digest}|{media.width}x{media.height}")
    return "\n".join(parts)
