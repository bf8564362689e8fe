"""Deploy previews: a preview build says it is one on every page, is noindex and disallows
every robot; the preview workflow's steps, run as written against the loopback S3 server,
put the preview under its prefix beside the main site without touching it, keep every
link inside the prefix, link each changed story, and remove exactly the prefix when the
pull request closes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import feedparser
import pytest
from click.testing import CliRunner
from conftest import tree
from pydantic import ValidationError
from storygen import REPO, make_corpus, make_story, write_story
from test_deploy import Server, aws_env, s3
from test_publish import run_step, steps, triggers, workflow

from desk.cli import main
from desk.config import DeployConfig

__all__ = ["aws_env", "s3"]  # fixtures, used by name
NOW = "2026-11-15T00:00:00Z"
PREVIEW_FLOW = REPO / ".github" / "workflows" / "preview.yml"
SITE_BUCKET = "newsroom"
BANNER = '<p class="draft-note preview-note" role="note"><strong>Preview</strong>'


def desk(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_step({"run": " ".join(["desk", *args])}, cwd)


def repo_site(tmp_path: Path, stories: int = 5) -> tuple[Path, list[dict[str, Any]]]:
    """A content repository with this repository's settings, under git."""
    site = tmp_path / "repo"
    site.mkdir()
    shutil.copy(REPO / "pyproject.toml", site / "pyproject.toml")
    made = make_corpus(site / "content", stories)
    # IndexNow and WebSub configured: a preview carries neither.
    with (site / "pyproject.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n")
    text = (site / "pyproject.toml").read_text(encoding="utf-8")
    (site / "pyproject.toml").write_text(text.replace(
        "[tool.desk]\n", '[tool.desk]\nindexnow_key = "0123456789abcdef"\n'
        'websub_hub = "https://hub.example.org/"\n', 1), encoding="utf-8")
    return site, made


def test_a_preview_says_so_on_every_page_and_asks_not_to_be_indexed(tmp_path: Path) -> None:
    site, _ = repo_site(tmp_path, 4)
    base = "https://news.example.org/previews/pr-7"
    result = desk(site, "build", "--preview", "--drafts", "--now", NOW, "--no-search",
                  "--base-url", base, "--out", "preview")
    assert result.returncode == 0, result.stderr
    preview = site / "preview"
    pages = sorted(preview.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        html = page.read_text(encoding="utf-8")
        robots = re.findall(r'<meta name="robots" content="([^"]+)">', html)
        assert robots == ["noindex"], page
        if "http-equiv=\"refresh\"" not in html:  # redirect pages move on at once
            assert html.count(BANNER) == 1, page
    assert (preview / "robots.txt").read_text() == "User-agent: *\nDisallow: /\n"
    assert not list(preview.glob("0123456789abcdef.txt"))
    feed = feedparser.parse((preview / "feed.xml").read_bytes())
    assert [link["rel"] for link in feed.feed.links if link["rel"] == "hub"] == []
    assert "hubs" not in json.loads((preview / "feed.json").read_text())

    # The same content built as the site: no banner, the key file, the hub.
    result = desk(site, "build", "--now", NOW, "--no-search", "--base-url",
                  "https://news.example.org", "--out", "public")
    assert result.returncode == 0, result.stderr
    public = site / "public"
    assert BANNER not in (public / "index.html").read_text()
    assert re.findall(r'<meta name="robots" content="([^"]+)">',
                      (public / "index.html").read_text()) == [
        "max-image-preview:large, max-snippet:-1, max-video-preview:-1"]
    assert (public / "0123456789abcdef.txt").read_text() == "0123456789abcdef"
    assert "Disallow" not in (public / "robots.txt").read_text()


def test_the_link_check_catches_a_link_out_of_the_preview(tmp_path: Path) -> None:
    site, _ = repo_site(tmp_path, 2)
    base = "https://news.example.org/previews/pr-7"
    assert desk(site, "build", "--preview", "--now", NOW, "--no-search", "--base-url", base,
                "--out", "preview").returncode == 0
    result = desk(site, "check", "--links", "preview", "--base-url", base)
    assert result.returncode == 0, result.stdout + result.stderr
    page = site / "preview" / "index.html"
    page.write_text(page.read_text().replace('href="/previews/pr-7/n/"', 'href="/n/"', 1))
    result = desk(site, "check", "--links", "preview", "--base-url", base)
    assert result.returncode == 1 and "/n/: outside the site's base path" in result.stdout


def objects(s3: Server, prefix: str = "") -> dict[str, bytes]:
    """What the bucket holds below prefix, as the server keeps it on disk."""
    return tree(s3.root / SITE_BUCKET / prefix)


@pytest.mark.slow
def test_preview_workflow_end_to_end(s3: Server, tmp_path: Path) -> None:
    site, stories = repo_site(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=site, check=True)
    subprocess.run([*git, "add", "-A"], cwd=site, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=site, check=True)
    if SITE_BUCKET not in {b["Name"] for b in s3.client().list_buckets()["Buckets"]}:
        s3.client().create_bucket(Bucket=SITE_BUCKET)

    # The main site at the bucket's root.
    main_deploy = ("deploy", "--to", f"s3://{SITE_BUCKET}", "--endpoint-url", s3.url,
                   "--site", "public")
    assert desk(site, "build", "--now", NOW, "--out", "public").returncode == 0
    assert desk(site, *main_deploy).returncode == 0
    main_site = objects(s3)
    assert "index.html" in main_site
    cache = tree(site / ".desk-cache")
    assert cache  # the main site's build cache, as a runner would have it

    # The pull request: one story edited, one added, a note that is no story.
    edited = stories[1] | {"headline": "An edited headline"}
    write_story(site / "content", edited)
    added = write_story(site / "content", make_story(60, "markets"))
    (site / "content" / "NOTES.txt").write_text("not a story\n")
    subprocess.run([*git, "add", "-A"], cwd=site, check=True)
    subprocess.run([*git, "commit", "-qm", "the pull request"], cwd=site, check=True)

    named = {s.get("name"): s for s in steps(PREVIEW_FLOW)}
    summary = tmp_path / "summary.md"
    env = {"PREVIEW_TO": f"s3://{SITE_BUCKET}/previews/pr-7/",
           "PREVIEW_URL": "https://news.example.org/previews/pr-7",
           "DESK_ENDPOINT_URL": s3.url, "GITHUB_STEP_SUMMARY": str(summary)}
    for name in ("Build the preview", "Check that every link stays inside the preview",
                 "Deploy the preview", "Link each changed story in the summary"):
        result = run_step(named[name], site, **env)
        assert result.returncode == 0, (name, result.stdout, result.stderr)
    assert tree(site / ".desk-cache") == cache  # the preview neither wrote nor replaced it
    preview = objects(s3, "previews/pr-7")
    assert preview["index.html"].count(BANNER.encode()) == 1
    assert preview["robots.txt"] == b"User-agent: *\nDisallow: /\n"
    assert {p: d for p, d in objects(s3).items() if not p.startswith("previews/")} == main_site

    page = f"stories/{edited['published_at'][:10]}/{edited['slug']}/"
    assert b"An edited headline" in preview[page + "index.html"]
    text = summary.read_text(encoding="utf-8")
    new = "https://news.example.org/previews/pr-7/stories/2026-11-14/story-number-60/"
    assert f"<https://news.example.org/previews/pr-7/{page}>" in text and f"<{new}>" in text
    assert f"` {added.relative_to(site).as_posix()} `" in text and "NOTES" not in text

    # Another pull request's preview; then the main site's next deploy leaves both alone.
    assert run_step(named["Deploy the preview"], site,
                    **env | {"PREVIEW_TO": f"s3://{SITE_BUCKET}/previews/pr-70/"}
                    ).returncode == 0
    other = objects(s3, "previews/pr-70")
    assert desk(site, "build", "--now", NOW, "--out", "public").returncode == 0
    result = desk(site, *main_deploy)
    assert result.returncode == 0, result.stderr
    assert objects(s3, "previews/pr-7") == preview and objects(s3, "previews/pr-70") == other
    main_site = {p: d for p, d in objects(s3).items() if not p.startswith("previews/")}
    assert b"An edited headline" in main_site[page + "index.html"]  # merged and published

    # Closing the pull request removes exactly its prefix.
    removing = next(s for s in steps(PREVIEW_FLOW) if s.get("name") == "Remove the preview")
    result = run_step(removing, site, **env)
    assert result.returncode == 0, result.stderr
    assert f"{len(preview)} object(s) deleted" in result.stdout
    assert objects(s3, "previews/pr-7") == {}
    assert objects(s3, "previews/pr-70") == other
    assert {p: d for p, d in objects(s3).items() if not p.startswith("previews/")} == main_site
    result = desk(site, "preview", "remove", "--to", f"s3://{SITE_BUCKET}", "--endpoint-url",
                  s3.url)
    assert result.returncode == 1 and "never a whole bucket" in result.stderr
    assert objects(s3, "previews/pr-70") == other


def test_preview_workflow_is_safe_for_forks_and_never_touches_the_build_cache() -> None:
    data = workflow(PREVIEW_FLOW)
    on = triggers(data)
    assert set(on) == {"pull_request"}  # never pull_request_target
    assert set(on["pull_request"]["types"]) == {"opened", "synchronize", "reopened", "closed"}
    assert data["permissions"] == {"contents": "read", "id-token": "write"}
    same_repo = "github.event.pull_request.head.repo.full_name == github.repository"
    for job in data["jobs"].values():
        assert same_repo in job["if"] and "vars.DESK_PREVIEW_TO != ''" in job["if"]
    uses = {s["uses"].split("@")[0] for s in steps(PREVIEW_FLOW) if "uses" in s}
    assert not {u for u in uses if u.startswith("actions/cache")}
    build = next(s for s in steps(PREVIEW_FLOW) if "desk build" in s.get("run", ""))
    assert "--no-cache" in build["run"] and "--preview" in build["run"]
    text = PREVIEW_FLOW.read_text(encoding="utf-8")
    assert set(re.findall(r"secrets\.(\w+)", text)) == {
        "AWS_PREVIEW_ACCESS_KEY_ID", "AWS_PREVIEW_SECRET_ACCESS_KEY"}
    remove = data["jobs"]["remove"]["steps"][0]
    assert remove["with"]["ref"] == "${{ github.event.pull_request.base.ref }}"


def test_preview_urls_skip_what_is_no_story(tmp_path: Path) -> None:
    site, stories = repo_site(tmp_path, 2)
    story = site / "content" / "stories" / stories[0]["published_at"][:10] / (
        stories[0]["slug"] + ".json")
    broken = site / "content" / "stories" / "broken.json"
    broken.write_text("{")
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(main, [
        "preview", "urls", "--config", str(site / "pyproject.toml"), "--base-url",
        "https://x.example/previews/pr-1", str(story), str(broken),
        str(site / "content" / "gone.json"), str(site / "pyproject.toml")],
        env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    url = (f"https://x.example/previews/pr-1/stories/{stories[0]['published_at'][:10]}/"
           f"{stories[0]['slug']}/")
    assert result.stdout.splitlines() == ["Preview: https://x.example/previews/pr-1/",
                                          f"{url}  {story.as_posix()}"]
    assert "broken.json: does not load" in result.stderr
    assert f"<{url}>" in summary.read_text()


def test_the_folder_a_deploy_leaves_alone_is_a_folder() -> None:
    assert DeployConfig().leave == ("previews/",)
    assert DeployConfig(leave=("/drafts",)).leave == ("drafts/",)
    for bad in ("", "/", "../up", "a/./b"):
        with pytest.raises(ValidationError, match="not a folder below the target"):
            DeployConfig(leave=(bad,))
