"""The pull-request check: the workflows that run `desk check` on pull requests, in this
repository and in every site `desk init` makes; the check's step run as written, on a
broken story, with GitHub's annotations and job summary."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from storygen import REPO, make_story, write_draft, write_story
from test_publish import run_step, steps, triggers, workflow

from desk.cli import main
from desk.content.findings import Finding
from desk.publish.checkrun import check_markdown, code_span

REPO_CHECK = REPO / ".github" / "workflows" / "check.yml"
STARTER_CHECK = REPO / "desk" / "starter" / "check.yml"
BIN = Path(sys.executable).parent


def init_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["init", str(site), "--base-url",
                                       "https://news.example.org"])
    assert result.exit_code == 0, result.output
    return site


def test_a_new_site_s_workflows_lint_clean(tmp_path: Path) -> None:
    site = init_site(tmp_path)
    flows = sorted((site / ".github" / "workflows").glob("*.yml"))
    assert [p.name for p in flows] == ["check.yml", "publish.yml"]
    for tool in (["actionlint", "-no-color"],
                 ["check-jsonschema", "--builtin-schema", "vendor.github-workflows"]):
        result = subprocess.run([str(BIN / tool[0]), *tool[1:], *map(str, flows)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
    assert (site / ".github/workflows/check.yml").read_bytes() == STARTER_CHECK.read_bytes()


def check_step(path: Path) -> dict[str, Any]:
    found = [s for s in steps(path) if "desk check" in s.get("run", "")]
    assert len(found) == 1
    return found[0]


def install_runs(path: Path) -> list[str]:
    """The install steps of a workflow's first job (a publish workflow's build)."""
    first = next(iter(workflow(path)["jobs"].values()))
    return [s["run"] for s in first["steps"] if "pip install" in s.get("run", "")]


@pytest.mark.parametrize("path, publish", [
    (REPO_CHECK, REPO / ".github/workflows/publish.yml"),
    (STARTER_CHECK, REPO / "desk/starter/publish.yml")], ids=["desk", "starter"])
def test_check_runs_on_pull_requests_with_no_secrets_and_the_publish_install(
        path: Path, publish: Path) -> None:
    data = workflow(path)
    on = triggers(data)
    assert set(on) == {"pull_request"}  # never pull_request_target: no secrets to a fork
    assert "content/**" in on["pull_request"]["paths"]
    assert data["permissions"] == {"contents": "read"}
    assert "secrets." not in path.read_text(encoding="utf-8")
    assert install_runs(path) == install_runs(publish)  # the same locked install
    assert all("timeout-minutes" in job for job in data["jobs"].values())
    # desk check exits 1 on any error; the step does not mask it.
    assert check_step(path)["run"].strip() == "desk check"


def broken_site(tmp_path: Path, which: Path) -> tuple[Path, Path]:
    """A site with one good story, one whose citation dangles, and a broken draft: a new
    site from `desk init`, or this repository's settings over a content folder."""
    if which == STARTER_CHECK:
        site = init_site(tmp_path)
    else:
        site = tmp_path / "repo"
        site.mkdir()
        shutil.copy(REPO / "pyproject.toml", site / "pyproject.toml")
    broken = make_story(40)
    broken["key_facts"][0]["cites"][0]["manifest_id"] = "nowhere"
    path = write_story(site / "content", broken)
    write_story(site / "content", make_story(41))
    draft = make_story(42)
    draft["key_facts"][0]["cites"][0]["manifest_id"] = "elsewhere"
    write_draft(site / "content", draft)
    return site, path


@pytest.mark.parametrize("path", [REPO_CHECK, STARTER_CHECK], ids=["desk", "starter"])
def test_a_broken_story_fails_the_check_with_an_annotation_on_its_line(
        path: Path, tmp_path: Path) -> None:
    site, story = broken_site(tmp_path, path)
    summary = tmp_path / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = run_step(check_step(path), site, **env)
    assert result.returncode == 1, result.stdout + result.stderr
    # The line of the dangling manifest id, read from the file as written.
    lines = story.read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(lines, 1) if '"nowhere"' in text)
    relative = story.relative_to(site).as_posix()
    annotations = [a for a in result.stdout.splitlines() if a.startswith("::")]
    assert (f"::error file={relative},line={line},title=desk check::[unknown-manifest] "
            "/key_facts/0/cites/0/manifest_id: ") in "\n".join(annotations)
    assert all(a.split(" file=")[1].startswith("content/") for a in annotations)
    # The draft's findings are marked too, as warnings: drafts never fail the check.
    drafts = [a for a in annotations if "story-number-42" in a]
    assert drafts and all(a.startswith("::warning ") for a in drafts)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## desk check\n") and "**failed**" in text
    assert f"| error | ` {relative}:{line} ` | ` [unknown-manifest] " in text
    assert "| error (draft) |" in text

    # Fixed, the same step passes, and the summary says so.
    story.unlink()
    summary.unlink()
    result = run_step(check_step(path), site, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed, 0 error(s)" in summary.read_text(encoding="utf-8")


def test_json_output_stays_json_under_github_actions(tmp_path: Path) -> None:
    site, _ = broken_site(tmp_path, STARTER_CHECK)
    result = run_step({"run": "desk check --format json"}, site, GITHUB_ACTIONS="true")
    assert result.returncode == 1
    assert {f["code"] for f in json.loads(result.stdout)} >= {"unknown-manifest"}


def test_summary_shows_author_text_as_code() -> None:
    hostile = Finding("content/stories/x.json", "/a|b", "unknown-key",
                      "unknown key ``<script>`` | x\n## heading", "warning")
    text = check_markdown([hostile], [], "1 stories")
    row = text.splitlines()[-2]
    assert row.startswith("| warning | ` content/stories/x.json:1 ` | ``` [unknown-key] ")
    assert "\\|" in row and "\n## heading" not in text and row.endswith(" ``` |")
    assert code_span("a`b") == "`` a`b ``"
