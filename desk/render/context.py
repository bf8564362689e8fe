"""The render context: everything a renderer may read, in one value.

Renderers take a RenderContext and return Output values; they import no cache, writer or
checks. The incremental part (`stories`) is what rendering the stories told the pages
around them: each story's key, its index.json digest, and what was captured while it
rendered (feed entries, the latest edition's Markdown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jinja2 import Environment

from desk.catalog import Catalog
from desk.config import Config
from desk.loader import LoadedStory, ParsedStory, read_story
from desk.models import Story
from desk.prose import Prose
from desk.render import Output
from desk.render.templates import SiteContext


@dataclass(frozen=True)
class StoryResults:
    """What the story stage tells the pages around the stories."""

    keys: Mapping[str, str] = field(default_factory=dict)  # unit key, by story path
    digests: Mapping[str, str] = field(default_factory=dict)  # index.json sha256, by path
    markdown: Mapping[str, bytes] = field(default_factory=dict)  # latest edition's index.md
    # Feed entries (desk.render.feeds.Entry) by story key: captured while rendering, or
    # kept by a long-running process; feeds add the ones they render themselves.
    entries: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderContext:
    """The catalog, config, templates, site values, markdown parser and clock of a build."""

    catalog: Catalog
    config: Config
    env: Environment
    site: SiteContext
    prose: Prose
    now: datetime
    stories: StoryResults = field(default_factory=StoryResults)
    # Stories the inspection parsed in this process, by file path (see read).
    parsed: Mapping[str, ParsedStory] = field(default_factory=dict)

    def read(self, item: LoadedStory) -> tuple[Story, dict[str, Any]]:
        """A story's model and parsed JSON: as inspected, or read from its file again
        (raising ContentChanged when its bytes are no longer the inspected ones)."""
        parsed = self.parsed.get(item.path)
        if parsed is not None and parsed.digest == item.digest:
            return parsed.story, parsed.data
        return read_story(item)

    def story_key(self, path: str, fallback: str) -> str:
        """A story's unit key (its file digest when it has none)."""
        return self.stories.keys.get(path, fallback)

    def story_keys(self, stories: Iterable[LoadedStory]) -> list[str]:
        """The unit keys of stories, as `story_key` gives each (list pages ask for every
        story of the site on every build: one call, not one a story)."""
        keys = self.stories.keys
        return [keys.get(s.url_path, s.digest) for s in stories]


@dataclass(frozen=True)
class Unit:
    """Files rendered together and kept or replaced together, with what they depend on.

    `inputs` are every input of the files besides the site key; None means the files are
    rendered on every build (cheap, or depending on the clock). `recurring` marks inputs
    that are short and recur from build to build (worth caching in a long-running
    process).
    """

    id: str
    inputs: tuple[str, ...] | None
    render: Callable[[], list[Output]]
    recurring: bool = False


Units = Iterator[Unit]
