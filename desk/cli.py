"""The `desk` command: reads flags, makes a Config, calls build, check, serve or
deploy; or makes a new site (init).

Exit status: 0 ok, 1 content errors (or a deploy refused or failed), 2 usage errors,
3 built with stories held back (`desk build --hold-back`), 4 another build or deploy
holds the site's lock (`--no-wait`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

# Only what the group and its options need is imported here: every command imports what
# it uses when it runs, so `desk --help` (and a command's --help) loads click and the
# standard library alone, not the models, templates or build engine (tests/test_startup.py).
from desk.build.heap import (
    collector_paused,
    large_blocks_returned,
)
from desk.commands import config_option
from desk.commands.announce import announce_command
from desk.commands.preview import preview_group

if TYPE_CHECKING:
    from desk.build.cache import BuildCache
    from desk.build.holdback import HeldStory
    from desk.build.pipeline import BuildReport
    from desk.build.target import Target
    from desk.config import Config, DeployConfig
    from desk.content.catalog import Clock
    from desk.content.findings import Finding
    from desk.content.history import UrlHistory
    from desk.serve.server import DevServer

QUIET, NORMAL, VERBOSE = -1, 0, 1
# `desk build --hold-back`'s exit status when it held back stories (the site was written).
HELD_BACK = 3
# desk.build.parallel.MAX_JOBS, named here so that --jobs is defined without importing the
# build engine (tests/test_startup.py holds the two equal).
MAX_JOBS = 64
# `--no-wait`'s exit status when another process holds the lock (nothing was done).
BUSY = 4


class IsoDatetime(click.ParamType):  # type: ignore[type-arg]
    """An ISO 8601 datetime with a UTC offset."""

    name = "ISO8601"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            parsed = datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 datetime", param, ctx)
        if parsed.tzinfo is None:
            self.fail(f"{value!r} has no UTC offset: add Z or +HH:MM", param, ctx)
        return parsed.astimezone(UTC)


def content_option(f: Any) -> Any:
    return click.option("--content", type=click.Path(path_type=Path),
                        help="Content folder (default: from pyproject.toml).")(f)


def url_history_option(f: Any) -> Any:
    return click.option("--url-history", type=click.Path(path_type=Path, exists=True,
                        dir_okay=False), help="The last deploy's desk-urls.json, for a run "
                        "with neither the cache nor the output folder.")(f)


def no_wait_option(f: Any) -> Any:
    return click.option("--no-wait", is_flag=True, help="When another build or deploy of "
                        f"the same site is running, exit at once with status {BUSY} instead "
                        "of waiting for it.")(f)


def verbosity_options(f: Any) -> Any:
    """-q and -v: how much a command prints (problems always)."""
    f = click.option("-v", "--verbose", is_flag=True, help="Print more: settings file, "
                     "timings, processes.")(f)
    return click.option("-q", "--quiet", is_flag=True, help="Print only problems.")(f)


def verbosity(quiet: bool, verbose: bool) -> int:
    """QUIET, NORMAL or VERBOSE; both flags at once are a usage error."""
    if quiet and verbose:
        raise click.UsageError("-q and -v cannot be used together")
    return QUIET if quiet else VERBOSE if verbose else NORMAL


def make_config(config_file: Path | None, level: int = NORMAL, **overrides: Any) -> Config:
    """Load the configuration or exit with status 2 and a clear message."""
    from desk.config import ConfigError, find_project_file, load_config

    try:
        config = load_config(config_file, overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if level >= VERBOSE:
        source = config_file or find_project_file(Path.cwd())
        click.echo(f"Settings: {source or 'none (flags only)'}", err=True)
    return config


def echo_findings(findings: list[Finding] | tuple[Finding, ...], with_code: bool = False) -> None:
    """Print findings one per line on stderr."""
    for finding in findings:
        click.echo(finding.format(with_code=with_code), err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="desk")
def main() -> None:
    """desk: a static site generator for news desks that publish source-cited stories.

    Start a site with `desk init DIR`, preview it with `desk serve`, publish with
    `desk build`.
    """
    large_blocks_returned()


@main.command("build")
@content_option
@click.option("--out", type=click.Path(path_type=Path), help="Output folder (default: public).")
@click.option("--base-url", help="Absolute URL the site is published at.")
@click.option("--now", type=IsoDatetime(), help="Build time (default: now, UTC).")
@click.option("--future", is_flag=True, help="Publish stories dated after --now too.")
@click.option("--drafts", is_flag=True, help="Previewing: write the drafts too, marked as "
              "drafts (not with --changes-only, which makes the live site's changes).")
@url_history_option
@click.option("--jobs", type=click.IntRange(1, MAX_JOBS, clamp=True),
              show_default=f"the number of cores, at most {MAX_JOBS}",
              help="Processes building the site (forked on Linux; one process elsewhere).")
@click.option("--no-cache", is_flag=True, help="Fresh: build from nothing into a fresh "
              "folder, neither reading nor saving the build cache (to check that a build "
              "from nothing gives the same site).")
@click.option("--changes-only", is_flag=True, help="Deploying from a runner that restored "
              "the build cache but not the site: write only the files that changed since the "
              "site the cache describes, and the list of every file, for `desk deploy` to the "
              "store that holds that site. A held-back story's last pages are read from the "
              "live site at the base URL.")
@click.option("--render-all", is_flag=True, help="Rebuilding every page (after a change the "
              "keys cannot see, or to upload everything again): render every page, keeping "
              "none of the last build's; the cache's inspections and URL history still "
              "count. With --changes-only the changes are the whole site.")
@click.option("--no-search", is_flag=True, help="Skip the search index and page.")
@click.option("--preview", is_flag=True, help="A deploy preview: a banner and noindex on "
              "every page, a robots.txt that disallows everything, no IndexNow key file or "
              "WebSub hub (give the preview's --base-url).")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where builds remember their work (default: .desk-cache).")
@click.option("--report", "report_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a JSON publish report here (also when the build is refused).")
@click.option("--hold-back", is_flag=True, help="Hold back each story whose file fails its "
              "checks instead of refusing the build: one published before keeps its last "
              "published pages, a new one appears nowhere, every other story is published. "
              f"Exit status {HELD_BACK} when any was held back, after the site is written.")
@no_wait_option
@config_option
@verbosity_options
def build_command(content: Path | None, out: Path | None, base_url: str | None,
                  now: datetime | None, future: bool, drafts: bool, url_history: Path | None,
                  jobs: int | None, no_cache: bool, changes_only: bool, render_all: bool,
                  no_search: bool, preview: bool, cache_dir: Path | None,
                  report_file: Path | None, hold_back: bool, no_wait: bool,
                  config_file: Path | None, quiet: bool, verbose: bool) -> None:
    """Build the site into the output folder, replacing it only when the build succeeds.

    \b
    The situations, each named once (desk/build/modes.py):
      desk build                   publish: render what changed, swap the site in whole
      desk build --changes-only    changes: only what changed, for `desk deploy`
      desk build --render-all      rebuild: render every page again
      desk build --no-cache        fresh: from nothing, remembering nothing
    --hold-back, --drafts, --future and --no-search go with any of them
    (not --drafts with --changes-only).

    \b
    Exit status: 0 built; 1 refused (content errors; with --hold-back, only errors
    about no single story: templates, settings, the content or output folder);
    2 usage errors; 3 built, with stories held back (--hold-back); 4 another build or
    deploy holds the site's lock (--no-wait; otherwise the build waits for it).
    """
    from desk.build.cache import BuildCache
    from desk.build.lock import guarded_by
    from desk.build.modes import Flags, ModeError, build_mode
    from desk.build.parallel import default_jobs
    from desk.build.survey import early_survey
    from desk.content.catalog import Clock

    level = verbosity(quiet, verbose)
    config = make_config(config_file, level, content_dir=content, output_dir=out,
                         base_url=base_url, search=False if no_search else None,
                         cache_dir=cache_dir, preview=preview or None)
    jobs = jobs or default_jobs()
    out = config.output_dir
    try:
        mode = build_mode(Flags(no_cache, changes_only, render_all, drafts))
    except ModeError as exc:
        raise click.UsageError(str(exc)) from None
    state_file = BuildCache.file_for(config.cache_dir, out) if mode.uses_cache else None
    # One writer per site and per cache, from before the cache is read until it is saved.
    # No cyclic garbage collection from the read on: the collector's passes over the
    # objects the read makes, as they pile up, cost a fifth to a third of it.
    with (locked("build", guarded_by(out, state_file), no_wait, level),
          early_survey(config.content_dir, state_file, jobs) as survey,
          collector_paused()):
        cache = BuildCache.saved_for(config.cache_dir, out) if mode.uses_cache else BuildCache()
        cache.survey = survey
        if not mode.keeps_pages:
            cache.state.disown()
        _run_build(BuildRun(config, mode.target(out), cache, jobs, level, report_file),
                   Clock(now or datetime.now(UTC), future, drafts, hold_back), url_history)


@dataclass(frozen=True)
class BuildRun:
    """What `desk build` was asked for: settings, target, cache and how much to print."""

    config: Config
    target: Target
    cache: BuildCache
    jobs: int
    level: int
    report_file: Path | None


def _run_build(run: BuildRun, clock: Clock, url_history: Path | None) -> None:
    """Build, print what happened and exit with the build's status."""
    from desk.build.pipeline import build
    from desk.publish.report import size_line

    config, cache, level, report_file = run.config, run.cache, run.level, run.report_file
    bar = ProgressBar(sys.stderr if level > QUIET else None)
    cache.history = given_history(url_history)
    report = build(config, clock, run.target, cache, run.jobs, bar.update)
    bar.finish()
    echo_findings(report.findings if level > QUIET else report.errors)
    echo_held_back(report.held_back)
    size = site_budget(report, clock.now, report_file is not None)
    write_reports(report, report_file, size)
    if not report.ok:
        click.echo(f"Build failed: {len(report.errors)} error(s); "
                   f"{config.output_dir} was left as it was.", err=True)
        sys.exit(1)
    if level > QUIET:
        click.echo(summary(report))
        if size is not None:
            click.echo(size_line(size))
    if size is not None and size["warning"]:
        click.echo(size["warning"], err=True)
    if level >= VERBOSE:
        click.echo(details(report, run.jobs), err=True)
    if report.held_back:
        click.echo(f"{len(report.held_back)} story file(s) held back: the site was built "
                   "without them; fix them and build again.", err=True)
        sys.exit(HELD_BACK)


@contextlib.contextmanager
def locked(role: str, guarded: list[tuple[Path, Path]], no_wait: bool, level: int
           ) -> Iterator[None]:
    """Hold the locks of what a command writes; with --no-wait, exit BUSY when held."""
    from desk.build.lock import LockBusy, writing

    def told(line: str) -> None:
        if level > QUIET:
            click.echo(f"desk {role}: {line}", err=True)
    try:
        with writing(guarded, role, wait=not no_wait, told=told):
            yield
    except LockBusy as exc:
        click.echo(f"desk {role}: {exc.guarded} is locked by {exc.holder}; nothing was done "
                   "(without --no-wait, desk waits for it)", err=True)
        sys.exit(BUSY)


def echo_held_back(held: tuple[HeldStory, ...]) -> None:
    """Each held story with its findings on stderr; under GitHub Actions, an annotation
    for each finding on stdout too."""
    from desk.publish.annotations import annotation

    for story in held:
        click.echo(f"Held back {story.path} ({story.note}):", err=True)
        for finding in story.findings:
            click.echo(f"  {finding.format(with_code=True)}", err=True)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for story in held:
            for finding in story.findings:
                click.echo(annotation(finding, "Story held back", f"held back: {story.note}"))


def site_budget(report: BuildReport, now: datetime, wanted: bool) -> dict[str, Any] | None:
    """The built site's size figures and budget warning, when `wanted` (for the report)
    or when the site may be near the warning line; None otherwise."""
    from desk.publish.budget import budget_data, measure, stories_per_day, worth_measuring

    if not report.ok or report.out_dir is None or not report.whole:
        return None
    if not (wanted or worth_measuring(len(report.published))):
        return None
    size = measure(report.out_dir, len(report.published))
    rate = stories_per_day((s.summary.published_at for s in report.published), now)
    return budget_data(size, rate, now)


class ProgressBar:
    """A one-line bar on a terminal, shown only once a build has run for a second."""

    def __init__(self, stream: Any) -> None:
        """A bar on stream (None: no bar at all)."""
        self._stream = stream
        self._started = time.monotonic()
        self._shown = False
        self._last = -1.0
        self._tty = bool(getattr(stream, "isatty", lambda: False)())

    def update(self, done: int, total: int) -> None:
        """Redraw at most ten times a second."""
        now = time.monotonic()
        if not self._tty or total == 0 or now - self._started < 1 or now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = width * done // total
        self._stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} stories")
        self._stream.flush()
        self._shown = True

    def finish(self) -> None:
        """Clear the bar's line."""
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()


def given_history(path: Path | None) -> UrlHistory | None:
    """The URL history in --url-history FILE, if given; exit 1 naming what is wrong."""
    from desk.content.history import read_history_file

    if path is None:
        return None
    history, problems = read_history_file(path)
    if problems:
        echo_findings(problems)
        sys.exit(1)
    return history


def write_reports(report: BuildReport, report_file: Path | None,
                  size: dict[str, Any] | None = None) -> None:
    """The JSON report, and the Markdown job summary when GitHub Actions asks for one."""
    from desk.publish.report import report_data, report_markdown

    data = report_data(report, size)
    if report_file is not None:
        report_file.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n",
                               encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(report_markdown(data))


def summary(report: BuildReport) -> str:
    """A few lines on what a build did."""
    count = len(report.published)
    what = (f"{report.files} files, {report.bytes / 1e6:.1f} MB" if report.whole else
            f"the changes to a site of {report.files} files: {report.bytes / 1e6:.1f} MB "
            f"written, {report.reused} unit(s) unchanged")
    lines = [
        f"Built {count} {'story' if count == 1 else 'stories'} into {report.out_dir}: "
        f"{what}, {len(report.warnings)} warning(s), {report.seconds:.2f} s"
    ]
    if report.held:
        held = len(report.held)
        lines.append(f"Held {held} future {'story' if held == 1 else 'stories'}:")
        for item in report.held[:10]:
            lines.append(f"  {item.url_path} @ {item.summary.published_at:%Y-%m-%dT%H:%M:%SZ}")
        if len(report.held) > 10:
            lines.append(f"  … and {len(report.held) - 10} more")
        if report.next_due:
            lines.append(f"Next due: {report.next_due:%Y-%m-%dT%H:%M:%SZ}")
    return "\n".join(lines)


def details(report: BuildReport, jobs: int) -> str:
    """What -v adds: how the stories were rendered and where the time went."""
    from desk.build.parallel import fork_safe

    how = (f"up to {jobs} processes" if jobs > 1 and fork_safe() else
           "one process" + ("" if jobs == 1 else f" (forking is not safe on {sys.platform})"))
    stages = ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in report.timings.items())
    return f"Rendered with {how}; {report.reused} unit(s) reused.\nTimings: {stages}"


@main.command("check")
@content_option
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@click.option("--links", "links_dir", type=click.Path(path_type=Path, file_okay=False,
              exists=True), help="Check the internal links of a built site instead.")
@click.option("--base-url", help="Base URL the built site was made for.")
@url_history_option
@config_option
@verbosity_options
def check_command(content: Path | None, strict: bool, fmt: str, links_dir: Path | None,
                  base_url: str | None, url_history: Path | None, config_file: Path | None,
                  quiet: bool, verbose: bool) -> None:
    """Check every story without writing anything (or, with --links, a built site)."""
    from desk.build.cache import remembered_history
    from desk.build.inspection import inspect_content
    from desk.content.findings import sort_findings
    from desk.content.media import media_findings
    from desk.publish.checkrun import tell_github
    from desk.publish.linkcheck import check_links

    level = verbosity(quiet, verbose)
    config = make_config(config_file, level, content_dir=content, base_url=base_url)
    findings: Sequence[Finding]
    drafts: Sequence[Finding] = ()
    if links_dir is not None:
        findings = check_links(links_dir, config)
        checked = f"{links_dir}: links"
    else:
        # The URL history knows the ids of published stories no longer in the content.
        history, problems = remembered_history(config.cache_dir, config.output_dir,
                                               given_history(url_history))
        inspection = inspect_content(config, history=history)
        # The image files the stories name, each decoded whole (a build decodes only
        # what it encodes).
        findings = [*problems, *sort_findings([*inspection.findings,
                                               *media_findings(inspection.stories, config)])]
        drafts = sort_findings([*inspection.draft_findings,
                                *media_findings(inspection.drafts, config)])
        checked = f"{len(inspection.stories)} stories"
        if inspection.drafts or drafts:
            checked += f" and {len(inspection.drafts)} drafts"
    echo_check(findings, drafts, fmt, checked, level)
    if fmt == "text":  # JSON output stays JSON alone
        tell_github(findings, drafts, checked, click.echo)
    failed = any(f.is_error for f in findings) or (strict and bool(findings))
    sys.exit(1 if failed else 0)


def echo_check(findings: Sequence[Finding], drafts: Sequence[Finding], fmt: str,
               checked: str, level: int) -> None:
    """What `desk check` found: the drafts' findings after the others, counted apart
    (they never fail the check: drafts are not published); with -q, only errors."""
    findings = [f for f in findings if f.is_error or level > QUIET]
    drafts = [f for f in drafts if f.is_error or level > QUIET]
    if fmt == "json":
        listed = [f.as_dict() for f in findings] + [f.as_dict() | {"draft": True}
                                                    for f in drafts]
        click.echo(json.dumps(listed, ensure_ascii=False, indent=2))
        return
    for finding in (*findings, *drafts):
        click.echo(finding.format(with_code=True))
    if level <= QUIET:
        return
    errors = sum(f.is_error for f in findings)
    line = f"{checked} checked: {errors} error(s), {len(findings) - errors} warning(s)"
    if drafts:
        draft_errors = sum(f.is_error for f in drafts)
        line += (f"; in drafts (not published, so not failing the check): "
                 f"{draft_errors} error(s), {len(drafts) - draft_errors} warning(s)")
    click.echo(line, err=True)


@main.command("schema")
@click.option("--kind", type=click.Choice(["story", "withdrawal", "page"]), default="story",
              show_default=True, help="Which file's schema: a story, a file of "
              "content/withdrawn/, or a page's front matter.")
@click.option("--base-url", help="Absolute URL the site is published at (the schema's $id "
              "is under it).")
@config_option
def schema_command(kind: str, base_url: str | None, config_file: Path | None) -> None:
    """Print the JSON Schema (draft 2020-12) of a story file, as a build publishes it at
    /schema/desk-1.json."""
    from desk import urls
    from desk.content.schema import schemas
    from desk.render.json import encode

    config = make_config(config_file, base_url=base_url)
    path = {"story": urls.STORY_SCHEMA, "withdrawal": urls.WITHDRAWAL_SCHEMA,
            "page": urls.PAGE_SCHEMA}[kind]
    click.echo(encode(schemas(config)[path]).decode("utf-8"), nl=False)


@main.command("serve")
@content_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 picks a free one).")
@click.option("--now", type=IsoDatetime(), help="Build time (default: the time of each build).")
@click.option("--future", is_flag=True, help="Show stories dated in the future too.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a browser.")
@config_option
@verbosity_options
def serve_command(content: Path | None, host: str, port: int, now: datetime | None,
                  future: bool, open_browser: bool, config_file: Path | None, quiet: bool,
                  verbose: bool) -> None:
    """Serve a live preview that rebuilds and reloads open pages on every save."""
    import webbrowser

    from desk.build.parallel import STOP_SIGNALS, default_jobs
    from desk.config import find_project_file, load_config
    from desk.serve.server import DevServer, ServeError

    level = verbosity(quiet, verbose)

    def load(base_url: str) -> Config:
        return load_config(config_file, {"content_dir": content, "base_url": base_url})

    # A broken config is a usage error at start (the preview has its own base URL).
    make_config(config_file, level, content_dir=content, base_url="http://127.0.0.1")
    try:
        server = DevServer(load, (host, port), now, future, serve_echo(level),
                           config_file or find_project_file(Path.cwd()))
    except ServeError as exc:
        click.echo(f"desk serve: {exc}", err=True)
        sys.exit(1)
    # A closed terminal or a process manager's stop is a stop, as Ctrl-C is.
    for stop_signal in sorted(STOP_SIGNALS):
        signal.signal(stop_signal, stop_on_signal(server, os.getpid()))
    # The threads that answer the browser take the interpreter from a save's build sooner
    # (every millisecond instead of every five): a page asked for mid-build loads faster.
    sys.setswitchinterval(SERVE_SWITCH_INTERVAL)
    def announce() -> None:  # once pages are served and saves watched
        click.echo(f"Serving {server.base_url}/ (Ctrl-C to stop)", err=True)
        if open_browser:
            webbrowser.open(server.base_url + "/")

    try:
        server.run(default_jobs(), announce)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    click.echo("Stopped.", err=True)


SERVE_SWITCH_INTERVAL = 0.001


def stop_on_signal(server: DevServer, serving_pid: int) -> Callable[[int, Any], None]:
    """The handler of a stop signal in desk serve (process `serving_pid`)."""
    def stop(signum: int, frame: Any) -> None:
        if os.getpid() != serving_pid:  # a worker forked before it reset its handlers
            os._exit(128 + signum)
        # The watcher reads the request at its next step, so the preview stops even when
        # the interrupt below is lost: Python drops an exception raised while a
        # finaliser runs, and the handler may run inside one.
        server.ask_stop()
        raise KeyboardInterrupt
    return stop


# The line desk serve prints after each good rebuild (left out by -q).
# `desk deploy`'s exit status when a folder of changes does not apply to the bucket.
CHANGES_REFUSED = 3
_REBUILT = re.compile(r": built \d+ stor(y|ies), \d+ warning\(s\) in ")


def serve_echo(level: int) -> Any:
    """How desk serve prints its lines: with -q, only problems."""
    def echo(line: str) -> None:
        if level > QUIET or not _REBUILT.search(line):
            click.echo(line, err=True)
    return echo


@main.command("init")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False))
@click.option("--base-url", required=True, help="Absolute URL the site will be published "
              "at, e.g. https://news.example.org or https://OWNER.github.io/REPO.")
@click.option("--title", help="The site's name (default: the host name of --base-url).")
@verbosity_options
def init_command(folder: Path, base_url: str, title: str | None, quiet: bool,
                 verbose: bool) -> None:
    """Start a new site in FOLDER: settings, an example story, a README and the publish
    workflow."""
    from desk.scaffold import ScaffoldError, scaffold

    level = verbosity(quiet, verbose)
    try:
        written = scaffold(folder, base_url, title)
    except ScaffoldError as exc:
        raise click.UsageError(str(exc)) from None
    if level >= VERBOSE:
        for path in written:
            click.echo(f"  {path}")
    if level > QUIET:
        click.echo(f"Started a site in {folder}. Next: cd {folder} && desk serve")


@main.command("deploy")
@click.option("--to", "target_url", required=True, metavar="s3://BUCKET[/PREFIX]",
              help="The bucket (and key prefix) to publish the site to.")
@click.option("--endpoint-url", help="The store's S3 endpoint, for stores other than AWS.")
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@click.option("--max-deletes", type=click.IntRange(min=0), help="Stop before changing "
              "anything when more objects would be deleted (default: [tool.desk.deploy] "
              "max_deletes, 1000).")
@click.option("--site", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="The built site to deploy (default: the output folder).")
@click.option("--jobs", type=click.IntRange(1, 64), default=16, show_default=True,
              help="Uploads at once.")
@click.option("--report", "report_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a JSON deploy report here.")
@no_wait_option
@config_option
def deploy_command(target_url: str, endpoint_url: str | None, dry_run: bool,
                   max_deletes: int | None, site: Path | None, jobs: int,
                   report_file: Path | None, no_wait: bool, config_file: Path | None) -> None:
    """Upload the changed files of a built site to an S3-compatible bucket.

    A folder made by `desk build --changes-only` is deployed only onto the site it
    changes; otherwise nothing is done and the exit status is 3 (build the whole site
    and deploy that). Other failures exit 1. A build of the folder that is running is
    waited for (with --no-wait: exit status 4), so a site is never uploaded mid-swap.
    """
    from desk.build.lock import guarded_by

    config = make_config(config_file)
    settings = deploy_settings(config_file, max_deletes)
    folder = site if site is not None else config.output_dir
    with locked("deploy", guarded_by(folder, None), no_wait, NORMAL):
        _deploy(folder, bucket_of(target_url, endpoint_url, jobs),
                DeployRun(settings, dry_run, jobs, report_file))


@dataclass(frozen=True)
class DeployRun:
    """What `desk deploy` was asked to do, besides where."""

    settings: DeployConfig
    dry_run: bool
    jobs: int
    report_file: Path | None


def bucket_of(target_url: str, endpoint_url: str | None, jobs: int) -> Any:
    """The bucket --to names, or a usage error."""
    # Imported here: boto3 takes longer to import than a small build takes to run.
    from desk.deploy.store import Bucket, make_client
    from desk.deploy.target import Target

    try:
        target = Target.parse(target_url)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--to") from None
    return Bucket(make_client(endpoint_url, jobs), target)


def _deploy(folder: Path, bucket: Any, run: DeployRun) -> None:
    """Deploy the folder (its lock held), print what happened and exit with its status."""
    from desk.build.writer import MARKER
    from desk.deploy.run import ChangesRefused, DeployError, deploy
    from desk.deploy.summary import deploy_data, deploy_line, deploy_markdown

    if not (folder / MARKER).is_file():
        raise click.UsageError(f"{folder} is not a site built by desk build (no {MARKER})")
    refused = False
    try:
        data = deploy_data(deploy(folder, bucket, run.settings, run.dry_run, run.jobs,
                                  echo_err))
    except DeployError as exc:
        data = deploy_data(exc.outcome, str(exc))
        refused = isinstance(exc, ChangesRefused)
    write_deploy_reports(data, run.report_file, deploy_markdown)
    if not data["ok"]:
        click.echo(f"Deploy failed: {data['error']}", err=True)
        sys.exit(CHANGES_REFUSED if refused else 1)
    click.echo(deploy_line(data))


def deploy_settings(config_file: Path | None, max_deletes: int | None) -> DeployConfig:
    """[tool.desk.deploy] with the flags that override it, or a usage error."""
    from desk.config import ConfigError, load_deploy_config

    try:
        settings = load_deploy_config(config_file)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    if max_deletes is not None:
        settings = settings.model_copy(update={"max_deletes": max_deletes})
    return settings


def echo_err(line: str) -> None:
    """A progress line on stderr."""
    click.echo(line, err=True)


def write_deploy_reports(data: dict[str, Any], report_file: Path | None,
                         markdown: Callable[[dict[str, Any]], str]) -> None:
    """The JSON deploy report, and the job summary under GitHub Actions."""
    if report_file is not None:
        report_file.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(markdown(data))

main.add_command(announce_command)
main.add_command(preview_group)
