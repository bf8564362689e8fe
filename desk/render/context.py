"""The render context: everything a renderer may read, in one value.

Renderers take a RenderContext and return Output values; they import no cache, writer or
checks. The incremental part (`stories`) is what rendering the stories told the pages
around them: each story's key, its index.json digest, and what was captured while it
rendered (feed entries, the latest edition's Markdown).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

from jinja2 import Environment

from desk.config import Config
from desk.content.catalog import Catalog
from desk.content.loader import LoadedStory, ParsedStory, read_story
from desk.content.models import Story
from desk.content.prose import Prose
from desk.render import Output
from desk.render.since import GroupName, Since, groups_of
from desk.render.templates import SiteContext

T = TypeVar("T")


@dataclass(frozen=True)
class StoryResults:
    """What the story stage tells the pages around the stories."""

    keys: Mapping[str, str] = field(default_factory=dict)  # unit key, by story path
    digests: Mapping[str, str] = field(default_factory=dict)  # index.json sha256, by path
    markdown: Mapping[str, bytes] = field(default_factory=dict)  # latest edition's index.md
    # Feed entries (desk.render.feeds.Entry) by story key: captured while rendering, or
    # kept by a long-running process; feeds add the ones they render themselves.
    entries: dict[str, object] = field(default_factory=dict)
    # The paths of the stories whose key may differ from the last build's (None: not
    # known, so nothing recalled from the last build is used).
    changed: frozenset[str] | None = None


class Recall:
    """What a long-running process (desk serve) keeps of the pages around the stories
    from one build to the next: values (a list page's inputs, sitemap lines), each with
    what it was made from. Values hold only what that and the site key determine; they
    are forgotten when the site key changes, and after a failed build."""

    # Values kept at most, before starting afresh: this many, or twice as many as a
    # build asked for since they were last forgotten, whichever is more (values of pages
    # gone are never asked for again; a build of 100,000 stories asks for about 240,000,
    # which a fixed bound of 200,000 forgot at every save, and a save that carries the
    # groups it leaves as they were asks for few). The same for the story keys, against
    # the stories they were told for.
    MAX_KEPT = 200_000

    def __init__(self) -> None:
        self.site = ""
        self._values: dict[Hashable, tuple[Any, Any]] = {}
        self._lines: dict[str, tuple[datetime, str]] = {}
        self._asked = 0  # values and lines asked for since the build began
        self._most = 0  # the most a build asked for since they were last forgotten
        # By story path: (the story, its newsroom's title, its unit key, the stories its
        # related links led to).
        self.story_keys: dict[str, tuple[LoadedStory, str, str,
                                         tuple[LoadedStory | None, ...]]] = {}
        # The catalog every published story's entry there was told for (None: not one).
        self.keys_for: Catalog | None = None

    def start(self, site: str) -> None:
        """Begin a build under a site key: values made under another are no use."""
        self._most = max(self._most, self._asked)
        told = len(self.keys_for.published) if self.keys_for is not None else 0
        # The keys of stories moved or removed are never asked for again either.
        if (site != self.site
                or len(self._values) + len(self._lines) > max(self.MAX_KEPT, 2 * self._most)
                or len(self.story_keys) > max(self.MAX_KEPT, 2 * told)):
            self.site = site
            self.forget()
        self._asked = 0

    def forget_values(self, names: Iterable[Hashable]) -> None:
        """Forget the values kept under these names."""
        for name in names:
            self._values.pop(name, None)

    def forget(self) -> None:
        """Keep nothing (a build failed: its values may not match the site kept)."""
        self._values, self._lines, self.story_keys = {}, {}, {}
        self.keys_for = None
        self._most = 0

    def line(self, path: str, lastmod: datetime,
             make: Callable[[str, datetime], str]) -> str:
        """A page's line of the sitemap's inputs, `make(path, lastmod)`: the one made
        before while the page's last modification is the same."""
        self._asked += 1
        found = self._lines.get(path)
        if found is not None and found[0] == lastmod:
            return found[1]
        line = make(path, lastmod)
        self._lines[path] = (lastmod, line)
        return line

    def value(self, name: Hashable, made_from: Any, make: Callable[[], T],
              fresh: bool = False) -> T:
        """The value kept under `name` when it was made from an equal `made_from` (and
        not `fresh`), else `make()`, kept for next time."""
        self._asked += 1
        found = self._values.get(name)
        if found is not None and not fresh and found[0] == made_from:
            value: T = found[1]
            return value
        value = make()
        self._values[name] = (made_from, value)
        return value


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
    # Kept by a long-running process between builds (None: nothing kept).
    recall: Recall | None = None
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

    def kept(self, name: Hashable, made_from: Any, make: Callable[[], T],
             fresh: bool = False) -> T:
        """`make()`, or the value a long-running process kept from the last build under
        `name` when it was made from an equal `made_from` (and not `fresh`)."""
        recall = self.recalling
        if recall is None:
            return make()
        return recall.value(name, made_from, make, fresh)

    @property
    def recalling(self) -> Recall | None:
        """The recall `kept` gives values kept from the last build from: a long-running
        process's, in a build that knows what changed since (else None: it makes each)."""
        return self.recall if self.stories.changed is not None else None

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

    @cached_property
    def touched(self) -> frozenset[GroupName]:
        """The newsrooms ("newsroom", key), editions ("edition", key), beats ("beat",
        "NEWSROOM/BEAT") and agents ("agent", key) of the stories
        whose key changed since the last build (see StoryResults.changed): their list
        pages show something new."""
        by_path = self.catalog.by_path
        return frozenset(name for path in self.stories.changed or () if path in by_path
                         for name in groups_of(by_path[path].summary))


class Unit(NamedTuple):
    """Files rendered together and kept or replaced together, with what they depend on.

    `inputs` are every input of the files besides the site key; None means the files are
    rendered on every build (cheap, or depending on the clock). `recurring` marks inputs
    that are short and recur from build to build (worth caching in a long-running
    process). A `standalone` unit's inputs are all it depends on: its key leaves out the
    site key (desk's code, the templates, the settings), as an image's files do. `cost`
    is its work in list pages (an image's file costs a hundred): a build shares its units
    with forked workers when they add up to enough.

    A named tuple, made at once: a build makes one for each of the 55,000 pages around
    the stories at 100,000 stories, most of them to be kept as they are.
    """

    id: str
    inputs: tuple[str, ...] | None
    render: Callable[[], Iterable[Output]]  # made as they are written, where it matters
    recurring: bool = False
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
