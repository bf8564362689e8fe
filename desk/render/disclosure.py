"""Who made a story and who answers for it: the disclosure every format carries.

Every story is written by an agent from cited sources; some are then reviewed by a person.
Readers are told so where they first meet the story (above its standfirst, on the cards
that list it), and software in the same words and facts (index.json, index.md, feeds,
JSON-LD). Computed once here, so no two formats can say it differently.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from desk.config import Config, Editor
from desk.content.models import Story
from desk.render.templates import isotime

# IPTC's digital source type of text a trained model generated from what it was given
# (schema.org's name for it). Not the "composite" types: the sources are not pasted in,
# the agent writes new text from their claims; not "algorithmic media" (made without
# training data). A person's review changes no word, so a reviewed story keeps it.
DIGITAL_SOURCE_TYPE = "https://schema.org/TrainedAlgorithmicMediaDigitalSource"

UNREVIEWED = "Published without human review"
# The compact marker of a listed story (a headline is an exposure too).
CARD_WRITTEN = "Agent-written"
CARD_REVIEWED = "Agent-written, human-reviewed"


@dataclass(frozen=True)
class Person:
    """Someone a story names: a reviewer, a newsroom's editor in charge."""

    name: str
    url: str = ""  # a page about them, "" for none

    def as_json(self) -> dict[str, str]:
        """The person for index.json."""
        return {"name": self.name, **({"url": self.url} if self.url else {})}

    def schema(self) -> dict[str, str]:
        """The person as a schema.org Person."""
        return {"@type": "Person", **self.as_json()}


@dataclass(frozen=True)
class Disclosure:
    """How a story was made and who answers for it."""

    agent: str  # the writing agent, "" when the story names none
    agent_href: str
    sources: int  # the manifests it lists
    reviewer: Person | None  # None: published without human review
    reviewed_at: datetime | None
    editor: Person | None  # the newsroom's editor in charge, from the settings

    @property
    def written(self) -> str:
        """'Written by agent muse from 3 sources'."""
        who = f"agent {self.agent}" if self.agent else "an agent"
        return f"Written by {who}{self.sources_text}"

    @property
    def sources_text(self) -> str:
        """' from 3 sources' ('' for none)."""
        return f" from {self.sources_count}" if self.sources else ""

    @property
    def sources_count(self) -> str:
        """'3 sources', '1 source'."""
        return f"{self.sources} source{'' if self.sources == 1 else 's'}"

    @property
    def reviewed_date(self) -> str:
        """The review's day as a reader reads it: '14 November 2026'."""
        at = self.reviewed_at
        return "" if at is None else f"{at.day} {at:%B %Y}"

    @property
    def reviewed(self) -> str:
        """'Reviewed by NAME, 14 November 2026', or that no person reviewed it."""
        if self.reviewer is None:
            return UNREVIEWED
        return f"Reviewed by {self.reviewer.name}, {self.reviewed_date}"

    @property
    def line(self) -> str:
        """The whole disclosure in one line of plain text."""
        return f"{self.written} · {self.reviewed}"

    def as_json(self, agent_url: str) -> dict[str, Any]:
        """The disclosure's facts for index.json and the JSON Feed."""
        return {
            "statement": self.line,
            "digital_source_type": DIGITAL_SOURCE_TYPE,
            "written_by": {"agent": self.agent, **({"url": agent_url} if agent_url else {})},
            "sources": self.sources,
            "human_review": None if self.reviewer is None or self.reviewed_at is None else {
                **self.reviewer.as_json(), "at": isotime(self.reviewed_at)},
            "editor_in_charge": None if self.editor is None else self.editor.as_json(),
        }


def _person(editor: Editor | None) -> Person | None:
    return None if editor is None else Person(editor.name, editor.url or "")


def disclosure_of(story: Story, sources: int, agent_href: str, config: Config) -> Disclosure:
    """A story's disclosure (`sources`: the manifests its page lists). A reviewer without
    a URL of their own who is the newsroom's editor in charge gets that editor's page."""
    editor = _person(config.editors.get(story.newsroom))
    review = story.review
    reviewer = None
    if review is not None:
        url = review.url or (editor.url if editor and editor.name == review.by else "")
        reviewer = Person(review.by, url)
    return Disclosure(
        agent=story.writer.agent if story.writer else "",
        agent_href=agent_href,
        sources=sources,
        reviewer=reviewer,
        reviewed_at=review.at.astimezone(UTC) if review is not None else None,
        editor=editor,
    )


def card_marker(reviewed_by: str) -> str:
    """What a card says of how its story was made."""
    return CARD_REVIEWED if reviewed_by else CARD_WRITTEN
