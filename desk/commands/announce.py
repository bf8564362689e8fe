"""`desk announce`: after a deploy, tell IndexNow and the WebSub hub what it changed.

Every problem past the flags (a source that cannot be read, an engine or hub that fails
or never answers) is a warning, on stderr, as a GitHub annotation and in the job summary:
the site is already published, so announcing never fails the run (exit status 0).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from desk.commands import config_option, settings

if TYPE_CHECKING:
    from desk.config import Config
    from desk.publish.announce import Announcement

# The URLs of other sites a warning names, at most.
_SHOWN = 3


@click.command("announce")
@click.option("--deploy-report", type=click.Path(path_type=Path, dir_okay=False),
              help="What to announce: the files this `desk deploy --report` uploaded.")
@click.option("--site", type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="What to announce: the files of this built site that differ from --since.")
@click.option("--since", type=click.Path(path_type=Path, file_okay=False),
              help="The site as it was before the build (e.g. a `cp -al` of it).")
@click.option("--urls", "urls_file", type=click.Path(path_type=Path, dir_okay=False),
              help="What to announce: a list written by `desk announce --list`.")
@click.option("--list", "list_file", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the URLs to announce here, for --urls in a later job (only when "
              "announcing is configured and something changed).")
@click.option("--dry-run", is_flag=True, help="Work out the URLs; send nothing.")
@config_option
def announce_command(deploy_report: Path | None, site: Path | None, since: Path | None,
                     urls_file: Path | None, list_file: Path | None, dry_run: bool,
                     config_file: Path | None) -> None:
    """Submit the pages and feeds a deploy changed to IndexNow, and ping the WebSub hub
    for each changed feed; both off until configured. Failures are warnings (exit 0)."""
    sources = [deploy_report is not None, site is not None, urls_file is not None]
    if sum(sources) != 1 or (site is None) != (since is None):
        raise click.UsageError("give one of --deploy-report FILE, --site DIR --since DIR "
                               "or --urls FILE")
    from desk.config import ConfigError, load_announce_config
    from desk.publish.annotations import warning as warning_command
    from desk.publish.announce import Announcement, announce, announce_markdown

    config = settings(config_file)
    try:
        wanted = load_announce_config(config_file)
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    enabled = bool(wanted.indexnow_endpoint and config.indexnow_key) or bool(config.websub_hub)
    # Off, nothing is worked out either (the Pages workflows run this on every publish).
    found = (_what(config, deploy_report, (site, since), urls_file) if enabled
             else Found(Announcement(), config))
    what, site_config, notes = _ours(config, found)
    if list_file is not None and what.urls:
        list_file.write_text(json.dumps(what.as_json(site_config.base_url), indent=1) + "\n",
                             encoding="utf-8")
    if found.problem:
        note = f"nothing announced: {found.problem}"
    elif not enabled:
        note = ("nothing to send: announcing is off (set indexnow_key and [announce] "
                "indexnow_endpoint, or websub_hub)")
    else:
        note = "dry run: nothing sent" if dry_run else ""
    sent = [] if note else announce(site_config, wanted, what)
    warnings = ([note] if found.problem else []) + notes
    warnings += [f"{s.service} {s.target}: {s.error}" for s in sent if not s.ok]
    for warning in warnings:
        click.echo(f"desk announce: warning: {warning}", err=True)
        if os.environ.get("GITHUB_ACTIONS") == "true":
            click.echo(warning_command("desk announce", warning))
    done = sum(s.ok for s in sent)
    click.echo(f"desk announce: {len(what.pages)} page(s) and {len(what.feeds)} feed(s) "
               f"changed; {done} of {len(sent)} request(s) answered"
               + (f" ({note})" if note else "") + ".", err=True)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(announce_markdown(what, sent, note))


@dataclass(frozen=True)
class Found:
    """What there is to announce, the settings of the site it is of (their base_url: the
    URL the site was built for), and why there is nothing, when there is not."""

    what: Announcement
    site: Config
    problem: str = ""


def _ours(config: Config, found: Found) -> tuple[Announcement, Config, list[str]]:
    """The URLs of the site announced, its settings, and what to say of the others and
    of a site built for another URL than the settings'."""
    base = found.site.base_url
    notes = []
    if base != config.base_url:
        notes.append(f"the site was built for {base}/, not for base_url {config.base_url}/ "
                     "of the settings: its own URLs and key location are announced")
    what, others = found.what.under(base)
    if others:
        shown = ", ".join(repr(url) for url in others[:_SHOWN])
        more = f" and {len(others) - _SHOWN} more" if len(others) > _SHOWN else ""
        notes.append(f"{len(others)} URL(s) not of the site at {base}/ left out (IndexNow "
                     f"refuses a whole batch for one of another host): {shown}{more}")
    return what, found.site, notes


def _what(config: Config, deploy_report: Path | None, sites: tuple[Path | None, Path | None],
          urls_file: Path | None) -> Found:
    """The URLs to announce and the settings of their site, or none and why not."""
    from desk.publish.announce import (
        Announcement,
        announcement,
        built_for,
        changed_paths,
        deployed_paths,
        list_site,
    )

    site, since = sites
    try:
        if urls_file is not None:
            listed = json.loads(urls_file.read_text("utf-8"))
            base = list_site(listed)
            return Found(Announcement.from_json(listed),
                         config.model_copy(update={"base_url": base}) if base else config)
        if deploy_report is not None:
            report = json.loads(deploy_report.read_text("utf-8"))
            return Found(announcement(config, *deployed_paths(report)), config)
        assert site is not None and since is not None
        if not since.is_dir():
            return Found(Announcement(), config, (f"{since}: no site from before the build "
                                                  "to compare with (a first build, or its "
                                                  "cache was evicted)"))
        built = config.model_copy(update={"base_url": built_for(site)})
    except OSError as exc:
        return Found(Announcement(), config, f"{exc.filename}: {exc.strerror}")
    except ValueError as exc:
        given = urls_file or deploy_report
        return Found(Announcement(), config, f"{given}: {exc}" if given else str(exc))
    return Found(announcement(built, *changed_paths(site, since)), built)
