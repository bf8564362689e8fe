"""`desk serve`: the live preview for editors.

It runs the same build() as `desk build` (with the drafts shown, and starting from the
built site's URL history) into a private folder, serves that folder over HTTP, watches
content, templates, static files and the config, rebuilds on change and tells open pages
to reload over Server-Sent Events on the same host and port. A failed build keeps the
last good site on screen with the errors drawn over every page. The reload script and
the overlay are added to HTML responses as they are served, never to files a build
writes. With no last site to resume, it serves once its first build has made its
catalog, each file asked for made on demand until that build ends (desk.serve.demand).
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import watchfiles

from desk.build.ahead import pages_ahead
from desk.build.cache import BuildCache, Session
from desk.build.pipeline import BuildReport, build
from desk.build.state import SavedState, read_state, snapshot
from desk.build.target import FreshStaging, InPlace, Target
from desk.build.writer import Known, files_of, place_ahead, site_id_of
from desk.config import Config, ConfigError
from desk.content.catalog import Clock
from desk.content.findings import Finding
from desk.render.context import RenderContext
from desk.serve.builds import Builds
from desk.serve.demand import PagesOnDemand
from desk.serve.folder import PreviewFolder
from desk.serve.http import PreviewHTTPServer, make_handler
from desk.serve.resume import Recorder, clock_text
from desk.serve.shown import SiteState, warnings_by_file

# How long a save waits for a render context to be shown ahead with, while the build
# that makes one runs (a resumed preview's first).
AHEAD_WAIT = 60
# Rendered bytes held at most while the preview's start updates its folder in place.
START_SPILL = 64_000_000

class DevServer:
    """Builds, serves and rebuilds; `run()` blocks until stop() or Ctrl-C."""

    def __init__(
        self,
        load: Callable[[str], Config],
        address: tuple[str, int],
        now: datetime | None,
        future: bool,
        echo: Callable[[str], None],
        project_file: Path | None = None,
    ) -> None:
        host, port = address
        self._load = load
        self._project_file = project_file
        self._now = now
        self._future = future
        self._echo = echo
        # The warnings last printed, by file: each is printed once, when it changes.
        self._told: dict[str, tuple[Finding, ...]] | None = None
        self._folder = PreviewFolder(_cache_dir(load))
        self.state = SiteState(folder=self._folder.site)
        # What the last preview of the site left (its own cache, beside its site), and
        # the session kept in memory between rebuilds.
        self._session = Session()
        self._loaded: BuildCache | None = None  # read when first needed (see _cache)
        self._recorder = (Recorder(self._folder.path, self._folder.site,
                                   clock_text(now, future)) if self._folder.shared else None)
        self._building = False
        # The build that runs, while it runs (pages placed ahead meanwhile are left as they
        # are), and the units of those pages.
        self._running: Known | None = None
        self._ahead_units: set[str] = set()
        self._ahead_count = 0  # pages placed ahead so far
        self._builds = Builds(self._build_asked)
        self._history_given = False
        # The site id of the served folder while pages placed ahead cleared its marker.
        self._known_id: str | None = None
        # The content folder's real path and its path as configured (see content_paths).
        self._content: tuple[Path, Path] | None = None
        self._stop = StopAsked()
        self._serving = False  # shutdown() waits for a serve loop: only one that started
        try:
            self.httpd = PreviewHTTPServer((host, port), make_handler(self.state),
                                           self._session.fork_gate)
        except OSError as exc:
            self._folder.close()
            if exc.errno == errno.EADDRINUSE:
                message = f"port {port} on {host} is in use; try --port {port + 1}"
                raise ServeError(message) from None
            raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        self.host, self.port = self.httpd.server_address[:2]
        shown = "localhost" if host in ("0.0.0.0", "::") else str(self.host)
        self.base_url = f"http://{shown}:{self.port}"

    @property
    def _cache(self) -> BuildCache:
        """What the last preview of the site left (its own cache, beside its site), with
        the session kept in memory between builds; read when first needed (a resumed
        preview reads it in the background of the site it serves)."""
        if self._loaded is None:
            self._loaded = (BuildCache.saved_for(self._folder.cache, self._folder.site)
                            if self._folder.shared else BuildCache())
            self._loaded.session = self._session
        return self._loaded

    def run(self, jobs: int, ready: Callable[[], None]) -> None:
        """Start (resumed, or with a build of `jobs` processes), serve, say `ready()`, and
        build after every batch of saves until stopped. The watcher is in place first:
        a save during the start is built after it."""
        changes = self._watching()
        first = next(changes, set())
        if self._resume():
            self.start()
            ready()
            # Its first build runs beside the saves: they are shown ahead once it has made
            # its catalog.
            self._builds.ask("resumed", None)
        else:
            # It serves once the start's build has its catalog (its loading forked before
            # any server thread runs), each page made on demand until that build ends.
            self._session.on_rendered = partial(self._serve_early, ready)
            self.rebuild("start", jobs=jobs)
            self._session.on_rendered = None
            if not self._serving:  # the start ended before its catalog was made
                self.start()
                ready()
        if first:
            self._batch(first)
        for batch in changes:
            if batch:
                self._batch(batch)

    def _serve_early(self, ready: Callable[[], None], ctx: RenderContext) -> None:
        """Serve while the start's build renders (called by it, once its catalog is made):
        the files it will write, made on demand with its render context."""
        self.state.start(PagesOnDemand(ctx, self._session.fork_gate).file)
        self.start()
        ready()

    def _resume(self) -> bool:
        """Serve the last preview's site at once when its record says it is the one a
        build would make now (see desk.serve.resume)."""
        if self._recorder is None:
            return False
        try:
            config = self._config()
        except ConfigError:
            return False
        now = self._now or datetime.now(UTC)
        if not self._recorder.resumable(config, self._build_state(config), now):
            return False
        self.state.resume()
        return True

    def _config(self) -> Config:
        """The settings of the preview (raising ConfigError)."""
        # No search index in the preview: it would cost seconds on every save.
        return self._load(self.base_url).model_copy(update={"search": False})

    @staticmethod
    def _build_state(config: Config) -> Path:
        """Where the state of the site's own build is saved (its URL history is the
        preview's first)."""
        return BuildCache.file_for(config.cache_dir, config.output_dir)

    def rebuild(self, reason: str, content_only: bool = False,
                jobs: int = 1) -> BuildReport | None:
        """Run the build once and publish its outcome.

        After a change to stories only, the site folder is updated in place (only the
        files that changed are written); any other change rebuilds into a new folder.
        `jobs` > 1 forks render workers (under the session's fork gate).
        """
        started = time.perf_counter()
        try:
            config = self._config()
        except ConfigError as exc:
            findings = tuple(Finding("pyproject.toml", "", "config", line)
                             for line in str(exc).splitlines())
            self.state.publish(None, findings)
            self._report(reason, None, findings, time.perf_counter() - started)
            return None
        problems = self._start_history(config)
        if problems:
            self.state.publish(None, problems)
            self._report(reason, None, problems, time.perf_counter() - started)
            return None
        return self._build(config, reason, content_only, jobs, started)

    def _build(self, config: Config, reason: str, content_only: bool, jobs: int,
               started: float) -> BuildReport:
        """rebuild() once the settings and the URL history are read."""
        now = self._now or datetime.now(UTC)
        folder = self.state.folder
        starting, known = not self.state.has_site, Known(self._known_id)
        self._building = True  # until it ends: a stop meanwhile leaves no record
        self._running, self._ahead_units = known, set()
        ahead_before = self._ahead_count
        seen = (self._recorder.before(config, self._build_state(config))
                if self._recorder is not None else None)
        target = self._target(content_only, known)
        in_place = isinstance(target, InPlace)
        report = build(config, Clock(now, self._future, drafts=True), target, self._cache,
                       jobs)
        self._running = None
        if self._ahead_units:  # their pages are newer than what the state says of them
            self._cache.state.forget_units(self._ahead_units)
        errors = report.errors if not report.ok else ()
        by_file = warnings_by_file(report) if report.ok else {}  # grouped once, for both
        if report.ok:
            self._known_id = None  # the marker has the site's id again
            self._cache.start_history = None  # the saved state has the preview's own now
        # Pages placed ahead while this build ran are newer than it: they wait for the next.
        self.state.publish(report, errors, by_file,
                           page_paths(known.replaced) if in_place and not starting else None,
                           keep_ahead=self._ahead_count != ahead_before)
        if report.ok:
            self._tell_new_warnings(by_file)
        seconds = time.perf_counter() - started
        if report.ok and not in_place:
            # A new folder: listed once the reload is sent, so the next save (written in
            # place) does not wait for it.
            self._session.present = files_of(folder)
        if self._recorder is not None:
            self._recorder.built(seen if report.ok else None, report.next_due)
        self._building = False
        # Said once the build has wholly ended: a preview stopped from then on leaves its
        # record for the next start (see desk.serve.resume).
        self._report(reason, report, errors, seconds)
        return report

    def saved(self, reason: str, changed: list[str] | None) -> BuildReport | None:
        """Build after a batch of saves (`changed`: the files, as the watcher names them,
        when all are content files; else None): the saved stories' own pages first, when
        they can be rendered ahead, then the build."""
        self._content = self._content or self._content_folder()
        named = (content_paths(changed, *self._content)
                 if changed is not None and self._content is not None else None)
        # After a save to content only, the other story files need no look.
        self._session.changed = None if named is None else named[0]
        if named is not None:
            self.place_ahead(named[1])
        return self.rebuild(reason, named is not None)

    def _content_folder(self) -> tuple[Path, Path] | None:
        """The content folder's real path and its path as configured (None: the settings
        cannot be read now)."""
        try:
            shown_as = self._load(self.base_url).content_dir
        except ConfigError:
            return None
        return shown_as.resolve(), shown_as

    def place_ahead(self, changed: list[str]) -> None:
        """Show the saved stories' own pages before the build that follows (`changed`:
        the files, as the content walk names them), when they can be rendered ahead."""
        if not self.state.has_site or self.state.errors:
            return
        # A resumed preview's first build makes one within seconds of its start.
        ahead = pages_ahead(changed, self._session.rendered_within(
            AHEAD_WAIT if self.state.warming else 0))
        if ahead is None:
            return
        running = self._running
        self._ahead_count += 1
        if running is not None:  # the build that runs must not take them for its own
            self._ahead_units.update(ahead.pages)
        had, files = place_ahead(self.state.folder, self.state.files, ahead.outputs, running)
        if had is not None:
            self._known_id = had
        self.state.place_ahead(files, ahead.pages, ahead.warnings)

    def _target(self, content_only: bool, known: Known) -> Target:
        """Where a build goes: after a save to stories only, into the served folder where
        it stands; at the start, there too when the last preview's state describes that
        folder (only what differs is written, nothing is linked again; the files of the
        site are taken from the state, not from a walk of the folder); else into a new
        folder swapped in whole."""
        folder, state = self.state.folder, self._cache.state
        if content_only and self.state.has_site:
            if not self._session.present:  # a resumed preview's first build
                self._session.present = (state_files(state) if state.describes(
                    site_id_of(folder)) else files_of(folder))
            return InPlace(folder, self.state.files, self._session.present, known=known)
        if not self.state.has_site and state.describes(site_id_of(folder)):
            self._session.present = state_files(state)
            # Nothing is served before this build succeeds: it may write as it goes.
            return InPlace(folder, self.state.files, self._session.present, START_SPILL)
        return FreshStaging(folder, self._remove_later)

    def _start_history(self, config: Config) -> tuple[Finding, ...]:
        """Before the first build: start from the URL history the next `desk build` would
        start from, so the preview redirects and gives notice where the site will (not
        from the one the last preview saved: builds may have published since; nor from
        that of whatever site its folder holds), until a build succeeds."""
        if self._history_given:
            return ()  # the preview's own, from its last build
        # With inspections of its own (a preview started before), only the history is
        # read: at 100,000 stories the build's whole state took 3 s of a resumed start's
        # first build, which a save made at once waits for.
        own = bool(self._cache.state.inspected)
        built = BuildCache.saved_for(config.cache_dir, config.output_dir, records=False)
        history, problems = built.recall_history(config.output_dir)
        if not problems:
            self._cache.start_history = history
            self._history_given = True
            if not own and built.file is not None:
                self._adopt(built.file)
        return tuple(problems)

    def _adopt(self, site_index: Path) -> None:
        """With nothing of its own, the first build takes the site's build's inspections
        (what a file's own checks find does not depend on the base URL), read from a copy
        of the site's index that no build writes: the site's builds change their index's
        rows in place, and the stories' texts are read from those rows when shown."""
        mine = self._cache.file
        if mine is None:
            return
        copy = mine.with_name(mine.name + ".adopted")
        if snapshot(site_index, copy):
            self._cache.state.adopt_inspections(read_state(copy, spare=False))

    def _remove_later(self, old_site: Path) -> None:
        """Delete a replaced site after the reload is sent, away from the build's names."""
        self._folder.throw_away_later(old_site)

    def _report(self, reason: str, report: BuildReport | None,
                errors: tuple[Finding, ...], seconds: float) -> None:
        for finding in errors:
            self._echo(finding.format())
        if report is not None and report.ok:
            count = len(report.published)
            self._echo(f"{reason}: built {count} {'story' if count == 1 else 'stories'}, "
                       f"{len(report.warnings)} warning(s) in {seconds:.2f} s")
        else:
            self._echo(f"{reason}: build failed with {len(errors)} error(s) in {seconds:.2f} s;"
                       " still serving the last good site")

    def _tell_new_warnings(self, by_file: dict[str, tuple[Finding, ...]]) -> None:
        """Print the warnings of each file whose warnings changed since they were last
        printed (at the start only their count: an archive may hold thousands)."""
        told, self._told = self._told, by_file
        if told is None:
            return
        for path, found in by_file.items():
            if told.get(path) != found:
                for finding in found:
                    self._echo(f"warning: {finding.format()}")

    def watch_paths(self) -> list[Path]:
        """Folders and files whose changes trigger a rebuild."""
        config = self._load(self.base_url)
        paths = [config.content_dir, config.templates_dir, config.static_dir]
        if self._project_file is not None:
            paths.append(self._project_file)
        return [p for p in paths if p.exists()]

    def watch(self, ready: Callable[[], None] | None = None) -> None:
        """Rebuild on every batch of changes until stopped; `ready()` once watching."""
        for changes in self._watching():
            if ready is not None:
                ready()
                ready = None
            if changes:
                self._batch(changes)

    def _watching(self) -> Iterator[set[tuple[Any, str]]]:
        """The batches of changes to what a build reads, until stopped; an empty one on
        each timeout (the first says the watcher is in place)."""
        try:
            paths = self.watch_paths()
        except ConfigError:
            paths = [self._project_file] if self._project_file else []
        self._content = self._content_folder()
        return watchfiles.watch(*paths, debounce=400, step=30, stop_event=self._stop,
                                raise_interrupt=False, rust_timeout=100,
                                yield_on_timeout=True)

    def _batch(self, changes: set[tuple[Any, str]]) -> None:
        """Build after one batch of changes; nothing an editor saves stops the server."""
        content = self._content[0] if self._content is not None else None
        names = sorted({_shorten(path) for _, path in changes})
        reason = "changed " + ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
        content_only = content is not None and all(
            Path(path).resolve().is_relative_to(content) for _, path in changes)
        named = (content_paths([path for _, path in changes], *self._content)
                 if content_only and self._content is not None else None)
        if named is not None:
            self._safely(self.place_ahead, named[1])  # even while the last save builds
        self._builds.ask(reason, None if named is None else named[0], named is not None)

    def _build_asked(self, reason: str, changed: set[str] | None, content_only: bool) -> None:
        """The build the saves since the last one asked for (`changed`: the content files
        they changed, None when not known; `content_only`: whether only content did)."""
        self._session.changed = changed
        self._safely(self.rebuild, reason, content_only)

    def _safely(self, step: Callable[..., object], *args: Any) -> None:
        """Run a step of a save; nothing an editor saves may stop the server."""
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001
            finding = Finding("desk", "", "internal", f"build crashed: {exc!r}")
            self.state.publish(None, (finding,))
            self._echo(finding.format())

    def settled(self, timeout: float = 600) -> bool:
        """Wait until the builds the saves so far asked for have run."""
        return self._builds.settled(timeout)

    def start(self) -> threading.Thread:
        """Serve in a background thread (the watcher runs in the caller's)."""
        thread = threading.Thread(target=self.httpd.serve_forever, daemon=True,
                                  name="desk-http")
        thread.start()
        self._serving = True
        return thread

    def ask_stop(self) -> None:
        """Ask run() to return: the watcher sees it within a step. Safe in a signal
        handler (it takes no lock the interrupted code may hold)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop watching and serving; remove the private folder."""
        self._stop.set()
        self._builds.close()
        with self.state.changed:
            self.state.closing = True
            self.state.changed.notify_all()
        if self._serving:
            self.httpd.shutdown()
        self.httpd.server_close()
        # The folder stays for the next preview of the site, which clears it (or serves
        # its site at once, by the record left here): stopping is as quick at 100,000
        # stories as at ten.
        if self._recorder is not None and self._loaded is not None and not self._building:
            inspected = self._loaded.state.inspected
            self._recorder.leave({path: record.stat for path, record in inspected.items()},
                                 site_id_of(self.state.folder))
        self._folder.close()


class StopAsked:
    """A stop asked for, read by the watcher at every step (its `stop_event`). A plain
    flag, not a threading.Event: a signal handler sets it, and Event.set() would wait
    for a lock the code it interrupted may hold."""

    def __init__(self) -> None:
        self._asked = False

    def set(self) -> None:
        self._asked = True

    def is_set(self) -> bool:
        return self._asked


class ServeError(Exception):
    """The server cannot start."""


def state_files(state: SavedState) -> set[str]:
    """Every file of the site a saved state describes: its units' and the loose ones."""
    found = set(state.loose)
    for record in state.units.values():
        found.update(record.files)
    return found


def _cache_dir(load: Callable[[str], Config]) -> Path | None:
    """The site's cache folder, where its preview folder lives (None: unreadable now)."""
    try:
        return load("http://127.0.0.1").cache_dir
    except ConfigError:
        return None


def content_paths(changed: list[str], content: Path, shown_as: Path
                  ) -> tuple[set[str], list[str]]:
    """The changed files as the watcher named them and as the content walk does (below
    `shown_as`, the content folder as configured, whose real path is `content`); and
    apart, as the content walk does."""
    walked = []
    for path in changed:
        real = Path(path).resolve()
        if real.is_relative_to(content):
            walked.append(str(shown_as / real.relative_to(content)))
    return {*changed, *walked}, sorted(set(walked))


def page_paths(files: list[str]) -> tuple[str, ...]:
    """The URL paths of the pages of some files of the site (a folder's index.html: the
    folder's path)."""
    found = set()
    for name in files:
        folder, _, base = name.rpartition("/")
        found.add(f"/{folder}/" if base == "index.html" and folder else
                  "/" if name == "index.html" else f"/{name}")
    return tuple(sorted(found))


def _shorten(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path

