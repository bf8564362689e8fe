"""`desk preview`: what the deploy previews of pull requests need besides `desk build
--preview` and `desk deploy`: the preview's URL of each story a pull request changes (for
the job summary), and removing a preview's prefix when its pull request closes."""

from __future__ import annotations

import os
from pathlib import Path

import click

from desk.commands import config_option, settings


@click.group("preview")
def preview_group() -> None:
    """Deploy previews of pull requests (see docs/publishing.md)."""


@preview_group.command("urls")
@click.argument("files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--base-url", required=True, help="The preview's base URL.")
@click.option("--content", type=click.Path(path_type=Path), help="Content folder "
              "(default: from the settings).")
@config_option
def urls_command(files: tuple[Path, ...], base_url: str, content: Path | None,
                 config_file: Path | None) -> None:
    """The preview's URL of each changed story file among FILES (others are skipped),
    on stdout and in the job summary."""
    from desk import urls
    from desk.content.loader import load_story_file, story_url_path

    config = settings(config_file, base_url=base_url, content_dir=content)
    found: list[tuple[str, str]] = []
    broken: list[str] = []
    for path in files:
        if path.suffix != ".json" or not path.is_file() or not _is_story(
                path, config.content_dir):
            continue  # not a story, or deleted by the pull request
        loaded = load_story_file(path, [])
        if loaded is None:
            broken.append(path.as_posix())
            continue
        found.append((path.as_posix(), urls.absolute(config, story_url_path(loaded[0]))))
    front = urls.absolute(config, urls.HOME)
    click.echo(f"Preview: {front}")
    for shown, url in found:
        click.echo(f"{url}  {shown}")
    for shown in broken:
        click.echo(f"{shown}: does not load (desk check says why)", err=True)
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as handle:
            handle.write(urls_markdown(front, found, broken))


def _is_story(path: Path, content: Path) -> bool:
    """A file below the content's stories or drafts folder."""
    resolved = path.resolve()
    return any(resolved.is_relative_to((content / folder).resolve())
               for folder in ("stories", "drafts"))


def urls_markdown(front: str, found: list[tuple[str, str]], broken: list[str]) -> str:
    """The job summary: the preview's front page and each changed story's page."""
    from desk.publish.checkrun import code_span

    lines = ["## Preview", "", f"The whole site: <{front}>", ""]
    if found:
        lines += ["| story file | its page in the preview |", "|---|---|"]
        lines += [f"| {code_span(path)} | <{url}> |" for path, url in found]
        lines.append("")
    lines += [f"- {code_span(path)} does not load: the check names its errors"
              for path in broken]
    return "\n".join(lines) + "\n"


@preview_group.command("remove")
@click.option("--to", "target_url", required=True, metavar="s3://BUCKET/PREFIX",
              help="The preview's prefix, e.g. s3://BUCKET/previews/pr-12/.")
@click.option("--endpoint-url", help="The store's S3 endpoint, for stores other than AWS.")
def remove_command(target_url: str, endpoint_url: str | None) -> None:
    """Delete every object below a preview's prefix (and nothing else)."""
    # Imported here, as for desk deploy: boto3 is slow to import.
    from desk.deploy.remove import RemoveError, remove_prefix
    from desk.deploy.store import Bucket, make_client
    from desk.deploy.target import Target

    try:
        target = Target.parse(target_url)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--to") from None
    try:
        removed = remove_prefix(Bucket(make_client(endpoint_url, 4), target))
    except RemoveError as exc:
        click.echo(f"desk preview remove: {exc}", err=True)
        raise SystemExit(1) from None
    click.echo(f"Removed {removed.target}: {removed.deleted} object(s) deleted.")
