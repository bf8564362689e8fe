"""`desk serve`: the live preview for editors.

It runs the first half of `desk build` (desk.build.pipeline.prepare: inspect → catalog →
render context and unit keys), with the drafts shown and starting from the built site's
URL history, at its start and after every batch of saves, incremental through an index
of its own (desk.serve.folder). Each file a browser asks for is made then, in memory, by
the build's own renderers (desk.serve.demand); no site is written. It watches content,
templates, static files and the config, and tells each open page to reload when what it
shows changed, over Server-Sent Events on the same host and port. A failed preparation
keeps the last good pages on screen with the errors drawn over every page. The reload
script and the overlay are added to HTML responses as they are served.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import watchfiles
from jinja2 import TemplateError

from desk.build.cache import BuildCache, Session
from desk.build.heap import collector_paused
from desk.build.lock import LockBusy
from desk.build.pipeline import BuildReport, Prepared, prepare
from desk.build.records import Stat, file_stat
from desk.build.state import read_state, snapshot
from desk.build.survey import EarlySurvey, early_survey
from desk.build.writer import MARKER
from desk.config import Config, ConfigError
from desk.content.catalog import Catalog, Clock
from desk.content.findings import Finding
from desk.content.history import UrlHistory
from desk.render.templates import template_finding
from desk.serve.demand import PagesOnDemand, Rendered
from desk.serve.folder import PreviewFolder
from desk.serve.http import PreviewHTTPServer, make_handler
from desk.serve.shown import SiteState, warnings_by_file
from desk.urls import URL_HISTORY, relative_file

# The stories a preparation parsed that its pages keep (a save's): a start's, thousands,
# are read again when a page shows one.
KEEP_PARSED = 64


class DevServer:
    """Prepares, serves and prepares again; `run()` blocks until stop() or Ctrl-C."""

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
        self.state = SiteState()
        # What is kept in memory between saves: what the preparation reads again only
        # for the files that changed, and the pages rendered, by unit key.
        self._session = Session()
        self._rendered = Rendered()
        self._loaded: BuildCache | None = None  # read when first needed (see _cache)
        self._adopted = False
        # The site's URL history, with the stats of the files it was read from.
        self._site_history: tuple[tuple[Stat | None, ...], UrlHistory] | None = None
        self._loaded_once = False  # a first preparation looks at every file
        # The story files the last preparation read (the others' inspections were kept).
        self.read: frozenset[str] = frozenset()
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
        """The preview's index, with the session kept in memory between saves; read
        when first needed."""
        if self._loaded is None:
            index = self._folder.index
            self._loaded = BuildCache(read_state(index, spare=False), index)
            self._loaded.session = self._session
        return self._loaded

    def run(self, jobs: int, ready: Callable[[], None]) -> None:
        """Prepare (with `jobs` processes), serve, say `ready()`, and prepare again after
        every batch of saves until stopped. The watcher is in place first: a save during
        the start is taken after it."""
        changes = self._watching()
        first = next(changes, set())
        self.prepare("start", jobs=jobs)
        self.start()
        ready()
        if first:
            self._batch(first)
        for batch in changes:
            if batch:
                self._batch(batch)

    def _config(self) -> Config:
        """The settings of the preview (raising ConfigError)."""
        # No search index in the preview: it would cost seconds on every save.
        return self._load(self.base_url).model_copy(update={"search": False})

    def prepare(self, reason: str, changed: set[str] | None = None,
                jobs: int = 1) -> BuildReport | None:
        """Prepare once (`changed`: the content files changed since the last time, None
        when not known) and show its outcome: a report (ok: its pages are served), or
        None when the settings or the URL history cannot be read."""
        started = time.perf_counter()
        try:
            config = self._config()
        except ConfigError as exc:
            findings = tuple(Finding("pyproject.toml", "", "config", line)
                             for line in str(exc).splitlines())
            self._failed(reason, findings, started)
            return None
        # The collector's passes over the objects an index's read makes, and its first
        # pass after a preparation over the whole heap (0.37 s a save at 100,000 stories
        # whose links lead to the site): it waits until the pages are shown and the
        # index saved.
        with collector_paused(), self._first_look(config, jobs) as survey:
            problems = self._start_history(config)
            if problems:
                self._failed(reason, problems, started)
                return None
            cache = self._cache
            cache.survey = survey
            # Asked only when not known: the watcher's paths (each save) or a first walk.
            self._session.changed = changed if self._loaded_once else None
            clock = Clock(self._now or datetime.now(UTC), self._future, drafts=True)
            made = prepare(config, clock, cache, self._folder.path / "index", jobs)
            self._loaded_once = True
            report = self._show(made)
            if report.ok:
                self._save(cache)
        self._report(reason, report, () if report.ok else report.errors,
                     time.perf_counter() - started)
        return report

    def _show(self, made: Prepared | BuildReport) -> BuildReport:
        """Publish a preparation's pages, or (refused) its errors over the last good
        pages; its report."""
        if not isinstance(made, BuildReport):
            made = _templates_checked(made)
        if isinstance(made, BuildReport):  # refused: the last good pages stay
            self.state.publish(None, made.errors)
            return made
        self.read = frozenset(made.ctx.parsed)
        if len(made.ctx.parsed) > KEEP_PARSED:  # a start's: read again when a page shows one
            made = replace(made, ctx=replace(made.ctx, parsed={}))
        by_file = warnings_by_file(made.findings)
        self.state.publish(PagesOnDemand(made, self._rendered, self._session.fork_gate), (),
                           page_warnings(made.catalog, by_file))
        self._tell_new_warnings(by_file)
        return _report_of(made)

    def _save(self, cache: BuildCache) -> None:
        """Keep the index for the next preparation and the next start (a failure, or
        another preview writing it, costs only time): once the new pages are served, as
        they need nothing of it (a fresh clone's first index is 100,000 stories' rows)."""
        try:
            with self._folder.writing():
                cache.save()
        except (LockBusy, OSError):
            pass

    def _failed(self, reason: str, findings: tuple[Finding, ...], started: float) -> None:
        self.state.publish(None, findings)
        self._report(reason, None, findings, time.perf_counter() - started)

    def _first_look(self, config: Config, jobs: int
                    ) -> AbstractContextManager[EarlySurvey | None]:
        """At the first preparation, the content's files looked at while the preview's
        index is read, as desk build does (desk.build.survey); after it, the watcher names
        the files that changed."""
        if self._loaded_once:
            return nullcontext()
        return early_survey(config.content_dir, self._folder.index, jobs)

    def _start_history(self, config: Config) -> tuple[Finding, ...]:
        """The URL history the next `desk build` would start from, so the preview
        redirects and gives notice where the site will; the site's build's inspections
        taken at the first start, when the preview has none of its own. Read again only
        when a file it comes from changed: at 100,000 stories a read takes a second."""
        files = _history_files(config)
        if self._site_history is not None and self._site_history[0] == files:
            self._cache.start_history = self._site_history[1]
            return ()
        built = BuildCache.saved_for(config.cache_dir, config.output_dir, records=False)
        history, problems = built.recall_history(config.output_dir)
        if problems:
            return tuple(problems)
        self._cache.start_history = history
        self._site_history = (files, history)
        if not self._adopted:
            self._adopted = True
            if not self._cache.state.inspected and built.file is not None:
                self._adopt(built.file)
        return ()

    def _adopt(self, site_index: Path) -> None:
        """Take the site's build's inspections (what a file's own checks find does not
        depend on the base URL), read from a copy of the site's index that no build
        writes: the site's builds change their index's rows in place, and the stories'
        texts are read from those rows when shown."""
        mine = self._folder.index
        copy = mine.with_name(mine.name + ".adopted")
        if snapshot(site_index, copy):
            self._cache.state.adopt_inspections(read_state(copy, spare=False))

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
        """Folders and files whose changes are prepared."""
        config = self._load(self.base_url)
        paths = [config.content_dir, config.templates_dir, config.static_dir]
        if self._project_file is not None:
            paths.append(self._project_file)
        return [p for p in paths if p.exists()]

    def watch(self, ready: Callable[[], None] | None = None) -> None:
        """Prepare on every batch of changes until stopped; `ready()` once watching."""
        for changes in self._watching():
            if ready is not None:
                ready()
                ready = None
            if changes:
                self._batch(changes)

    def _watching(self) -> Iterator[set[tuple[Any, str]]]:
        """The batches of changes to what a preparation reads, until stopped; an empty
        one on each timeout (the first says the watcher is in place)."""
        try:
            paths = self.watch_paths()
        except ConfigError:
            paths = [self._project_file] if self._project_file else []
        self._content = self._content_folder()
        return watchfiles.watch(*paths, debounce=400, step=30, stop_event=self._stop,
                                raise_interrupt=False, rust_timeout=100,
                                yield_on_timeout=True)

    def _content_folder(self) -> tuple[Path, Path] | None:
        """The content folder's real path and its path as configured (None: the settings
        cannot be read now)."""
        try:
            shown_as = self._load(self.base_url).content_dir
        except ConfigError:
            return None
        return shown_as.resolve(), shown_as

    def _batch(self, changes: set[tuple[Any, str]]) -> None:
        """Prepare after one batch of changes; nothing an editor saves stops the server."""
        names = sorted({_shorten(path) for _, path in changes})
        reason = "changed " + ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
        self._safely(self.prepare, reason, self.content_changed([p for _, p in changes]))

    def content_changed(self, changed: list[str]) -> set[str] | None:
        """The content files among the changed paths, as the watcher and the content
        walk name them; None when anything else changed (every file is looked at)."""
        content = self._content
        if content is None or not all(Path(p).resolve().is_relative_to(content[0])
                                      for p in changed):
            return None
        return content_paths(changed, *content)

    def _safely(self, step: Callable[..., object], *args: Any) -> None:
        """Run a step of a save; nothing an editor saves may stop the server."""
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001
            finding = Finding("desk", "", "internal", f"build crashed: {exc!r}")
            self.state.publish(None, (finding,))
            self._echo(finding.format())

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
        """Stop watching and serving (the index stays for the next preview)."""
        self._stop.set()
        self.state.close()
        if self._serving:
            self.httpd.shutdown()
        self.httpd.server_close()
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


def _templates_checked(made: Prepared) -> Prepared | BuildReport:
    """A preparation, or the report of its refusal when a template cannot be compiled:
    a build finds it as it renders, a preview before it serves any page from them (the
    last good pages stay on screen with the error over them)."""
    env = made.ctx.env
    problems = []
    for name in env.list_templates():
        try:
            env.get_template(name)
        except TemplateError as exc:
            problems.append(template_finding(exc, made.ctx.config.templates_dir))
    if not problems:
        return made
    return BuildReport(False, (*problems, *made.findings))


def _report_of(made: Prepared) -> BuildReport:
    """What a preparation tells, as a build's report does."""
    catalog = made.catalog
    return BuildReport(ok=True, findings=made.findings, published=catalog.published,
                       held=catalog.held, skipped=catalog.skipped,
                       redirects=catalog.redirects, withdrawn=catalog.notices,
                       newsrooms=catalog.newsrooms, editions=catalog.editions)


def page_warnings(catalog: Catalog, by_file: dict[str, tuple[Finding, ...]]
                  ) -> dict[str, tuple[Finding, ...]]:
    """The warnings `by_file`, by the URL path of the page of the story they are about."""
    if not by_file:
        return {}
    return {item.url_path: by_file[item.path]
            for item in (*catalog.published, *catalog.skipped) if item.path in by_file}


def _cache_dir(load: Callable[[str], Config]) -> Path | None:
    """The site's cache folder, where its preview folder lives (None: unreadable now)."""
    try:
        return load("http://127.0.0.1").cache_dir
    except ConfigError:
        return None


def content_paths(changed: list[str], content: Path, shown_as: Path) -> set[str]:
    """The changed files as the watcher named them and as the content walk does (below
    `shown_as`, the content folder as configured, whose real path is `content`)."""
    walked = set()
    for path in changed:
        real = Path(path).resolve()
        if real.is_relative_to(content):
            walked.add(str(shown_as / real.relative_to(content)))
    return {*changed, *walked}


def _shorten(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path


def _history_files(config: Config) -> tuple[Stat | None, ...]:
    """The stats of the files the site's URL history is read from: the site's index, and
    the built site's marker and history file (a build swaps in a new site)."""
    out = config.output_dir
    index = BuildCache.file_for(config.cache_dir, out)
    return tuple(file_stat(str(path)) for path in (
        index, out / MARKER, out / relative_file(URL_HISTORY)))
