"""The render context: everything a renderer may read, in one value.

Renderers take a RenderContext and return Output values; they import no cache, writer or
checks. The incremental part (`stories`) is what rendering the stories told the pages
around them: each story's key, its index.json digest, and what was captured while it
rendered (feed entries, the latest edition's Markdown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from jinja2 import Environment

from desk.config import Config
from desk.content.catalog import Catalog
from desk.content.loader import LoadedStory, ParsedStory, read_story
from desk.content.models import Story
from desk.content.prose import Prose
from desk.render import Output
from desk.render.since import GroupName, Since
from desk.render.templates import SiteContext

T = TypeVar("T")


@dataclass(frozen=True)
class StoryResults:
    """What the story stage tells the pages around the stories."""

    keys: Mapping[str, str] = field(default_factory=dict)  # unit key, by story path
    digests: Mapping[str, str] = field(default_factory=dict)  # index.json sha256, by path
    markdown: Mapping[str, bytes] = field(default_factory=dict)  # latest edition's index.md
    # Feed entries (desk.render.feeds.Entry) by story key: captured while rendering, or
    # kept in the index; feeds add the ones they make themselves.
    entries: MutableMapping[str, object] = field(default_factory=dict)
    # The paths of the stories whose key may differ from the last build's (None: not
    # known, so nothing recalled from the last build is used).
    changed: frozenset[str] | None = None


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
    # The groups whose list pages may differ from the last build's (None: not known).
    since: Since | None = None

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

    def settled(self, name: GroupName, stories: Sequence[LoadedStory]
                ) -> Callable[[int], bool] | None:
        """Which pages of a group's list (by number: 0 the latest, archive pages from 1,
        the oldest) have the inputs the last build gave them, so their keys stand (see
        desk.render.since); None when that is not known."""
        if self.since is None:
            return None
        return self.since.settled(name, stories, self.config.page_size)

    def unchanged(self, name: GroupName) -> bool:
        """Whether the list pages of a group have the inputs the last build gave them
        (see desk.render.since): their keys stand, and their inputs need not be made."""
        return self.since is not None and name not in self.since.touched


class Unit(NamedTuple):
    """Files rendered together and kept or replaced together, with what they depend on.

    `inputs` are every input of the files besides the site key; None means the files are
    rendered on every build (cheap, or depending on the clock). A `standalone` unit's
    inputs are all it depends on: its key leaves out the site key (desk's code, the
    templates, the settings), as an image's files do. `cost` is its work in list pages (an
    image's file costs a hundred): a build shares its units with forked workers when they
    add up to enough.

    A named tuple, made at once: a build makes one for each of the 55,000 pages around
    the stories at 100,000 stories, most of them to be kept as they are.
    """

    id: str
    inputs: tuple[str, ...] | None
    render: Callable[[], Iterable[Output]]  # made as they are written, where it matters
    standalone: bool = False
    cost: int = 1
    # The inputs, not made (`inputs` is None): they are the ones the last build gave the
    # unit (see RenderContext.unchanged), so its last key stands. Made only when the
    # last build left no such unit.
    carried: Callable[[], tuple[str, ...]] | None = None


class CarriedUnits(NamedTuple):
    """Units whose inputs are the ones the last build gave them (see Unit.carried), told
    by their ids: a build carries them in one pass over its ledger and makes the units
    of only those it cannot keep (`unit_at`: the unit of the id at that place, as it
    would have come alone). At 100,000 stories, 40,000 editions are carried so every
    hour; making each one's unit and carrying it alone took a third of a second."""

    ids: Sequence[str]
    unit_at: Callable[[int], Unit]

    def each(self) -> Iterator[Unit]:
        """Every unit of the batch, made one by one (for a reader of a few pages)."""
        return map(self.unit_at, range(len(self.ids)))


Units = Iterator[Unit | CarriedUnits]
K = TypeVar("K")


def carried_apart(keys: Iterable[K], stands: Callable[[K], bool], id_of: Callable[[K], str],
                  unit_of: Callable[[K], Unit]) -> Units:
    """The unit of each of `keys` (`unit_of`): those whose inputs are the last build's
    (`stands`) as one batch of their ids (CarriedUnits), made only if asked for; then
    the others, one by one."""
    keys = list(keys)
    standing = list(map(stands, keys))
    carried = [key for key, stood in zip(keys, standing, strict=True) if stood]
    if carried:
        yield CarriedUnits([id_of(key) for key in carried], lambda i: unit_of(carried[i]))
    yield from (unit_of(key) for key, stood in zip(keys, standing, strict=True) if not stood)


def each_unit(units: Units) -> Iterator[Unit]:
    """Every unit, a batch's made one by one."""
    for unit in units:
        if isinstance(unit, CarriedUnits):
            yield from unit.each()
        else:
            yield unit
