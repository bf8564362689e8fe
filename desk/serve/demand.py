"""Pages on demand: the preview's only way to make a file of the site.

Enters: what the build's first half prepared (desk.build.pipeline.prepare: the render
context and the unit keys), and a file of the site a request names. Leaves: that file's
bytes, made by the build's own renderers with that very context, so byte for byte what a
build writes there: a story's files, a page around the stories (whose cards show each
story's index.json digest: the stories a page shows are rendered for it, one by one,
when it asks), a picture's variant, a static asset; or None when the site has no such
file. Rendered outputs are kept in memory (Rendered) by unit id and unit key, so a page
whose key stands after a save is not rendered again; nothing is written.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from desk import urls
from desk.build.pipeline import Prepared, story_key
from desk.content.digests import digest
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.render.context import CarriedUnits, RenderContext, StoryResults, Unit
from desk.render.since import Since
from desk.render.site import site_units
from desk.render.story import Wanted, render_story_unit

_NOTHING = Wanted(frozenset(), frozenset())


class Rendered:
    """The outputs of the units rendered so far, by unit id, with the key each was
    rendered under: kept from one save to the next (a unit whose key changed is rendered
    again and replaces its last outputs; one rendered on every request, keyless, is not
    kept)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[str, tuple[Output, ...]]] = {}

    def get(self, unit_id: str, key: str) -> tuple[Output, ...] | None:
        found = self._kept.get(unit_id)
        return found[1] if found is not None and found[0] == key else None

    def put(self, unit_id: str, key: str, outputs: Iterable[Output]) -> tuple[Output, ...]:
        kept = self._kept[unit_id] = (key, tuple(outputs))
        return kept[1]


class PagesOnDemand:
    """The files of one prepared site, each made when asked for (one at a time: a
    request's thread renders holding `gate`, which a preparation holds while it forks a
    worker: see Session.fork_gate)."""

    def __init__(self, prepared: Prepared, rendered: Rendered,
                 gate: AbstractContextManager[object] | None = None) -> None:
        ctx = prepared.ctx
        self._key_of = story_key(ctx, prepared.keys)
        self._keys = prepared.keys
        self._rendered = rendered
        # Every list's units come with their inputs unmade (as a build's do for the
        # groups no change touched): made when a page is asked for, to key it.
        self._ctx = replace(ctx, since=Since(frozenset()), stories=StoryResults(
            keys=_Lazy(self._story_key, ctx.catalog.by_path),
            digests=_Lazy(self.digest, ctx.catalog.by_path), entries=ctx.stories.entries))
        self._assets = {urls.relative_file(a.path): a.source for a in prepared.assets}
        self._lock = threading.RLock()  # a page asks for its stories' digests within
        self._gate = gate or nullcontext()
        # The site's units around the stories by id, their inputs unmade, as far as the
        # pages asked for so far needed them made (a front page needs a few; the site's
        # 55,000 at 100,000 stories took half a second): the rest, made in order.
        self._units: dict[str, Unit | tuple[CarriedUnits, int]] = {}
        self._unmade: Iterator[Unit | CarriedUnits] | None = iter(site_units(self._ctx))
        self._made_by: dict[str, str] = {}  # the unit id of each file made so far
        self._story_keys: dict[str, str] = {}
        self._digests: dict[str, str] = {}

    @property
    def ctx(self) -> RenderContext:
        """The render context every file is made with."""
        return self._ctx

    def file(self, relative: str) -> bytes | None:
        """The bytes of a file of the site (its path relative to the site), or None."""
        source = self._assets.get(relative)
        if source is not None:
            return source.read_bytes()
        folder = "/" + relative[:relative.rfind("/") + 1]
        with self._gate, self._lock:
            outputs = self._story(folder)
            if outputs is not None:
                return _named(outputs, relative)
            for unit in self._candidates(relative, folder):
                found = _named(self._outputs(unit), relative)
                if found is not None:
                    return found
        return None

    def _candidates(self, relative: str, folder: str) -> Iterator[Unit]:
        """The units that may make a file: the one that made it last; a page's, its
        folder's; a feed's, a sitemap's or a picture's, the one it names; then the other
        files' units of its folder (a feed's other formats), and the units rendered on
        every build (the reuse terms' files lie in other folders)."""
        named = (self._made_by.get(relative), folder, "/" + relative)
        for unit_id in dict.fromkeys(i for i in named if i is not None):
            unit = self._unit(unit_id)
            if unit is not None:
                yield unit
        units = self._index()
        for unit_id in list(units):
            if (not unit_id.endswith("/") and unit_id.startswith(folder)
                    and "/" not in unit_id[len(folder):] and unit_id not in named):
                yield self._unit(unit_id) or _nothing(unit_id)
        for found in list(units.values()):
            if isinstance(found, Unit) and found.inputs is None and found.carried is None:
                yield found

    def files(self) -> dict[str, bytes]:
        """Every file of the site, each made as `file` makes it, by its path relative to
        the site: the stories', the pages' around them, the assets."""
        found: dict[str, bytes] = {}
        with self._gate, self._lock:
            for path in self._ctx.catalog.by_path:
                for output in self._story(path) or ():
                    found[urls.relative_file(output.path)] = output.data
            for unit_id in list(self._index()):
                for output in self._outputs(self._unit(unit_id) or _nothing(unit_id)):
                    found[urls.relative_file(output.path)] = output.data
        for relative, source in self._assets.items():
            found[relative] = source.read_bytes()
        return found

    def digest(self, path: str) -> str | None:
        """The sha256 of a published story's index.json (None: no such story)."""
        with self._lock:
            found = self._digests.get(path)
            if found is None:
                outputs = self._story(path)
                if outputs is None:
                    return None
                found = self._digests[path] = hashlib.sha256(outputs[2].data).hexdigest()
            return found

    def _story_key(self, path: str) -> str | None:
        """A published story's unit key (None: no such story)."""
        found = self._story_keys.get(path)
        if found is None:
            item = self._ctx.catalog.by_path.get(path)
            if item is None:
                return None
            found = self._story_keys[path] = self._key_of(item)
        return found

    def _story(self, path: str) -> tuple[Output, ...] | None:
        """A published story's three files, when `path` is one's URL path: kept while
        its unit key stands."""
        item: LoadedStory | None = self._ctx.catalog.by_path.get(path)
        key = self._story_key(path)
        if item is None or key is None:
            return None
        kept = self._rendered.get(path, key)
        if kept is not None:
            return kept
        outputs, _ = render_story_unit(item, key, self._ctx, _NOTHING)
        return self._rendered.put(path, key, outputs)

    def _outputs(self, unit: Unit) -> tuple[Output, ...]:
        """A unit's files: kept while its key stands, else rendered (every time for a
        unit rendered on every build)."""
        inputs = unit.carried() if unit.carried is not None else unit.inputs
        if inputs is None:
            outputs = tuple(unit.render())
        else:
            key = digest(*inputs) if unit.standalone else self._keys.key(inputs)
            outputs = (self._rendered.get(unit.id, key)
                       or self._rendered.put(unit.id, key, unit.render()))
        for output in outputs:
            self._made_by[urls.relative_file(output.path)] = unit.id
        return outputs

    def _index(self) -> dict[str, Unit | tuple[CarriedUnits, int]]:
        """The site's units around the stories by id, their inputs unmade: all of them."""
        while self._make_next():
            pass
        return self._units

    def _make_next(self) -> bool:
        """Index the next of the site's units (or batch of them); False when all are."""
        unit = next(self._unmade, None) if self._unmade is not None else None
        if unit is None:
            self._unmade = None
            return False
        if isinstance(unit, CarriedUnits):
            self._units.update((unit_id, (unit, i)) for i, unit_id in enumerate(unit.ids))
        else:
            self._units[unit.id] = unit
        return True

    def _unit(self, unit_id: str) -> Unit | None:
        """The unit of the site around the stories with this id, if any: the site's
        units made in order until it comes."""
        found = self._units.get(unit_id)
        while found is None and self._make_next():
            found = self._units.get(unit_id)
        if found is None or isinstance(found, Unit):
            return found
        batch, i = found
        return batch.unit_at(i)


def _nothing(unit_id: str) -> Unit:
    return Unit(unit_id, None, list)


def _named(outputs: Iterable[Output], relative: str) -> bytes | None:
    """The bytes of the output that is the file `relative`, if one is."""
    return next((o.data for o in outputs if urls.relative_file(o.path) == relative), None)


class _Lazy(Mapping[str, str]):
    """A value of each published story, by URL path, made when asked for."""

    def __init__(self, make: Callable[[str], str | None], published: Mapping[str, object]) -> None:
        self._make = make
        self._published = published

    def __getitem__(self, path: str) -> str:
        found = self._make(path)
        if found is None:
            raise KeyError(path)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._published)

    def __len__(self) -> int:
        return len(self._published)
