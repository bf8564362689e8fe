"""Pages on demand: what desk serve shows while its first build still renders, for the
files a browser asks for before that build has written them.

Enters: the render context that build tells the session once its catalog is made
(Session.tell_rendered), and a file of the site a request names. Leaves: that file's
bytes, made by the build's own renderers with that very context, so byte for byte what
the build writes there: a story's files, a page around the stories (whose cards show
each story's index.json digest: the stories a page shows are rendered for it, one by
one, when it asks), a static asset; or None when the file is none of those, and the
request waits for the build.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace

from desk import urls
from desk.render import Output
from desk.render.assets import collect_assets
from desk.render.context import RenderContext, StoryResults, Unit, each_unit
from desk.render.site import site_units
from desk.render.story import Wanted, render_story_unit

_NOTHING = Wanted(frozenset(), frozenset())


class PagesOnDemand:
    """The files of one build's site, each made when asked for (one at a time: a
    request's thread renders while the build goes on in its own, holding `gate`, which
    the build holds while it forks a worker: see Session.fork_gate)."""

    def __init__(self, ctx: RenderContext,
                 gate: AbstractContextManager[object] | None = None) -> None:
        # Nothing kept between builds is used or changed (the build's own process keeps
        # it); the stories' digests are made as lists ask for them.
        self._ctx = replace(ctx, recall=None, stories=StoryResults(
            digests=_Digests(self, ctx.catalog.by_path)))
        self._assets = {urls.relative_file(a.path): a.source
                        for a in collect_assets(ctx.config.static_dir)}
        self._lock = threading.RLock()  # a page asks for its stories' digests within
        self._gate = gate or nullcontext()
        self._units: dict[str, Unit] = {}  # by id, as far as the site's units were read
        self._rest: Iterator[Unit] | None = None
        self._digests: dict[str, str] = {}

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
            # A page's files are its folder's unit; a feed's, a sitemap's or an image's,
            # the unit named by the file (a feed's other two formats wait for the build).
            for unit_id in (folder, "/" + relative):
                unit = self._unit(unit_id)
                found = _named(unit.render(), relative) if unit is not None else None
                if found is not None:
                    return found
        return None

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

    def _story(self, path: str) -> list[Output] | None:
        """A published story's three files, when `path` is one's URL path."""
        item = self._ctx.catalog.by_path.get(path)
        if item is None:
            return None
        outputs, _ = render_story_unit(item, "", self._ctx, _NOTHING)
        return outputs

    def _unit(self, unit_id: str) -> Unit | None:
        """The unit of the site around the stories with this id, reading the site's units
        only as far as it: the front page comes first, the sitemaps last."""
        found = self._units.get(unit_id)
        if found is not None:
            return found
        if self._rest is None:
            self._rest = each_unit(site_units(self._ctx))
        for unit in self._rest:
            self._units[unit.id] = unit
            if unit.id == unit_id:
                return unit
        return None


def _named(outputs: Iterable[Output], relative: str) -> bytes | None:
    """The bytes of the output that is the file `relative`, if one is."""
    return next((o.data for o in outputs if urls.relative_file(o.path) == relative), None)


class _Digests(Mapping[str, str]):
    """Each published story's index.json digest, by URL path, made when asked for."""

    def __init__(self, pages: PagesOnDemand, published: Mapping[str, object]) -> None:
        self._pages = pages
        self._published = published

    def __getitem__(self, path: str) -> str:
        found = self._pages.digest(path)
        if found is None:
            raise KeyError(path)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._published)

    def __len__(self) -> int:
        return len(self._published)
