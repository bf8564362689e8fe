"""The `desk` command: reads flags, makes a Config, calls build, check or serve.

Exit status: 0 ok, 1 content errors, 2 usage errors.
"""

from __future__ import annotations

import json
import os
import sys
import time
import webbrowser
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from desk.build import BuildReport, build
from desk.cache import BuildCache, remembered_history
from desk.catalog import Clock
from desk.config import Config, ConfigError, find_project_file, load_config
from desk.findings import Finding
from desk.history import UrlHistory, read_history_file
from desk.inspection import inspect_content
from desk.linkcheck import check_links
from desk.report import report_data, report_markdown
from desk.serve import DevServer, ServeError
from desk.target import FreshStaging, RecycledSpare


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


def config_option(f: Any) -> Any:
    return click.option("--config", "config_file", type=click.Path(path_type=Path,
                        exists=True, dir_okay=False),
                        help="pyproject.toml to read [tool.desk] from.")(f)


def url_history_option(f: Any) -> Any:
    return click.option("--url-history", type=click.Path(path_type=Path, exists=True,
                        dir_okay=False), help="The last deploy's desk-urls.json, for a run "
                        "with neither the cache nor the output folder.")(f)


def make_config(config_file: Path | None, **overrides: Any) -> Config:
    """Load the configuration or exit with status 2 and a clear message."""
    try:
        return load_config(config_file, overrides)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None


def echo_findings(findings: list[Finding] | tuple[Finding, ...], with_code: bool = False) -> None:
    """Print findings one per line on stderr."""
    for finding in findings:
        click.echo(finding.format(with_code=with_code), err=True)


@click.group()
@click.version_option(package_name="desk")
def main() -> None:
    """desk: build the Hanging Context site from story files."""


@main.command("build")
@content_option
@click.option("--out", type=click.Path(path_type=Path), help="Output folder (default: public).")
@click.option("--base-url", help="Absolute URL the site is published at.")
@click.option("--now", type=IsoDatetime(), help="Build time (default: now, UTC).")
@click.option("--future", is_flag=True, help="Publish stories dated after --now too.")
@click.option("--drafts", is_flag=True, help="Write the drafts too, marked as drafts.")
@url_history_option
@click.option("--jobs", type=click.IntRange(1, 64), default=os.cpu_count() or 1,
              show_default="the number of cores", help="Processes rendering stories.")
@click.option("--no-cache", is_flag=True, help="Build from scratch; neither read nor save "
              "the build cache.")
@click.option("--no-search", is_flag=True, help="Skip the search index and page.")
@click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where builds remember their work (default: .desk-cache).")
@click.option("--report", "report_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write a JSON publish report here (also when the build is refused).")
@config_option
def build_command(content: Path | None, out: Path | None, base_url: str | None,
                  now: datetime | None, future: bool, drafts: bool, url_history: Path | None,
                  jobs: int, no_cache: bool, no_search: bool, cache_dir: Path | None,
                  report_file: Path | None, config_file: Path | None) -> None:
    """Build the site into the output folder, replacing it only when the build succeeds."""
    config = make_config(config_file, content_dir=content, output_dir=out, base_url=base_url,
                         search=False if no_search else None, cache_dir=cache_dir)
    bar = ProgressBar(sys.stderr)
    out = config.output_dir
    # --no-cache: a build from nothing into a fresh folder, remembering nothing.
    target = FreshStaging(out) if no_cache else RecycledSpare(out)
    cache = BuildCache() if no_cache else BuildCache.saved_for(config.cache_dir, out)
    cache.history = given_history(url_history)
    report = build(config, Clock(now or datetime.now(UTC), future, drafts), target, cache,
                   jobs, bar.update)
    bar.finish()
    echo_findings(report.findings)
    write_reports(report, report_file)
    if not report.ok:
        click.echo(f"Build failed: {len(report.errors)} error(s); "
                   f"{config.output_dir} was left as it was.", err=True)
        sys.exit(1)
    click.echo(summary(report))


class ProgressBar:
    """A one-line bar on a terminal, shown only once a build has run for a second."""

    def __init__(self, stream: Any) -> None:
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
    if path is None:
        return None
    history, problems = read_history_file(path)
    if problems:
        echo_findings(problems)
        sys.exit(1)
    return history


def write_reports(report: BuildReport, report_file: Path | None) -> None:
    """The JSON report, and the Markdown job summary when GitHub Actions asks for one."""
    data = report_data(report)
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
    lines = [
        f"Built {count} {'story' if count == 1 else 'stories'} into {report.out_dir}: "
        f"{report.files} files, {report.bytes / 1e6:.1f} MB, "
        f"{len(report.warnings)} warning(s), {report.seconds:.2f} s"
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
def check_command(content: Path | None, strict: bool, fmt: str, links_dir: Path | None,
                  base_url: str | None, url_history: Path | None,
                  config_file: Path | None) -> None:
    """Check every story without writing anything (or, with --links, a built site)."""
    config = make_config(config_file, content_dir=content, base_url=base_url)
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
        findings, drafts = [*problems, *inspection.findings], inspection.draft_findings
        checked = f"{len(inspection.stories)} stories"
        if inspection.drafts or drafts:
            checked += f" and {len(inspection.drafts)} drafts"
    echo_check(findings, drafts, fmt, checked)
    failed = any(f.is_error for f in findings) or (strict and bool(findings))
    sys.exit(1 if failed else 0)


def echo_check(findings: Sequence[Finding], drafts: Sequence[Finding], fmt: str,
               checked: str) -> None:
    """What `desk check` found: the drafts' findings after the others, counted apart
    (they never fail the check: drafts are not published)."""
    if fmt == "json":
        listed = [f.as_dict() for f in findings] + [f.as_dict() | {"draft": True}
                                                    for f in drafts]
        click.echo(json.dumps(listed, ensure_ascii=False, indent=2))
        return
    for finding in (*findings, *drafts):
        click.echo(finding.format(with_code=True))
    errors = sum(f.is_error for f in findings)
    line = f"{checked} checked: {errors} error(s), {len(findings) - errors} warning(s)"
    if drafts:
        draft_errors = sum(f.is_error for f in drafts)
        line += (f"; in drafts (not published, so not failing the check): "
                 f"{draft_errors} error(s), {len(drafts) - draft_errors} warning(s)")
    click.echo(line, err=True)


@main.command("serve")
@content_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0 picks a free one).")
@click.option("--now", type=IsoDatetime(), help="Build time (default: the time of each build).")
@click.option("--future", is_flag=True, help="Show stories dated in the future too.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a browser.")
@config_option
def serve_command(content: Path | None, host: str, port: int, now: datetime | None,
                  future: bool, open_browser: bool, config_file: Path | None) -> None:
    """Serve a live preview that rebuilds and reloads open pages on every save."""
    def load(base_url: str) -> Config:
        return load_config(config_file, {"content_dir": content, "base_url": base_url})

    make_config(config_file, content_dir=content)  # a broken config is a usage error at start
    try:
        server = DevServer(load, (host, port), now, future, lambda line: click.echo(line, err=True),
                           config_file or find_project_file(Path.cwd()))
    except ServeError as exc:
        click.echo(f"desk serve: {exc}", err=True)
        sys.exit(1)
    try:
        server.rebuild("start", jobs=os.cpu_count() or 1)  # no threads run yet: forking is safe
        server.start()

        def announce() -> None:  # once saves are being watched
            click.echo(f"Serving {server.base_url}/ (Ctrl-C to stop)", err=True)
            if open_browser:
                webbrowser.open(server.base_url + "/")

        server.watch(ready=announce)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    click.echo("Stopped.", err=True)
