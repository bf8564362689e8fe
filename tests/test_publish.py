"""Publishing: the workflows, the publish report and the quality gates on built sites."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from picturegen import pictured_story
from storygen import REPO, make_corpus, make_story, write_draft, write_story, write_withdrawal

from desk.cli import main
from desk.config import load_config
from desk.content.models import CHANGE_KINDS
from desk.publish.linkcheck import check_links

WORKFLOWS = REPO / ".github" / "workflows"
# The publish workflow `desk init` gives a new site.
STARTER_WORKFLOW = REPO / "desk" / "starter" / "publish.yml"
# Every workflow `desk init` writes.
STARTER_WORKFLOWS = sorted((REPO / "desk" / "starter").glob("*.yml"))
ALL_WORKFLOWS = [*sorted(WORKFLOWS.glob("*.yml")), *STARTER_WORKFLOWS]
PUBLISH_WORKFLOWS = [WORKFLOWS / "publish.yml", STARTER_WORKFLOW]
# Every workflow that publishes: to Pages, to object storage, a new site's.
ALL_PUBLISH_WORKFLOWS = [WORKFLOWS / "publish.yml", WORKFLOWS / "publish-s3.yml",
                         STARTER_WORKFLOW]
NOW = "2026-11-15T00:00:00Z"

# The current major version of every action the workflows use: each runs on Node 24
# (Node 20 is gone from GitHub's runners); upload-pages-artifact v5 is the first that can
# keep hidden paths (include-hidden-files).
CURRENT_ACTIONS = {
    "actions/checkout": "v7",
    "actions/setup-python": "v7",
    "actions/setup-java": "v5",
    "actions/cache": "v6",
    "actions/cache/restore": "v6",
    "actions/cache/save": "v6",
    "actions/upload-artifact": "v7",
    "actions/download-artifact": "v8",
    "actions/configure-pages": "v6",
    "actions/upload-pages-artifact": "v5",
    "actions/deploy-pages": "v5",
    "aws-actions/configure-aws-credentials": "v6",
}


def workflow(name: str | Path) -> dict[Any, Any]:
    path = name if isinstance(name, Path) else WORKFLOWS / name
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def steps(path: Path) -> list[dict[str, Any]]:
    return [step for job in workflow(path)["jobs"].values() for step in job["steps"]]


def step_using(path: Path, action: str) -> dict[str, Any]:
    return next(s for s in steps(path) if s.get("uses", "").split("@")[0] == action)


def triggers(data: dict[Any, Any]) -> dict[str, Any]:
    found: dict[str, Any] = data.get("on", data.get(True))  # YAML 1.1 reads `on` as true
    return found


def test_workflows_pass_the_schema_linter() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "check-jsonschema"), "--builtin-schema",
         "vendor.github-workflows", *map(str, ALL_WORKFLOWS)],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflows_pass_actionlint() -> None:
    result = subprocess.run([str(Path(sys.executable).parent / "actionlint"), "-no-color",
                             *map(str, ALL_WORKFLOWS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_action_is_on_its_current_major_version() -> None:
    for path in ALL_WORKFLOWS:
        for step in steps(path):
            if "uses" in step:
                action, _, version = step["uses"].partition("@")
                assert CURRENT_ACTIONS.get(action) == version, (path.name, step["uses"])


def test_publish_builds_for_the_pages_url_from_the_locked_dependencies() -> None:
    for path in PUBLISH_WORKFLOWS:
        pages = step_using(path, "actions/configure-pages")
        build = next(s for s in steps(path) if "desk build" in s.get("run", ""))
        assert build["env"]["BASE_URL"] == f"${{{{ steps.{pages['id']}.outputs.base_url }}}}"
        assert '--base-url "$BASE_URL"' in build["run"]
        artifact = step_using(path, "actions/upload-pages-artifact")["with"]
        assert str(artifact["include-hidden-files"]).lower() == "true"
    install = " ".join(s.get("run", "") for s in steps(WORKFLOWS / "publish.yml"))
    assert "pip install --require-hashes -r requirements.lock" in install
    assert "pip install --no-deps ." in install


def test_ci_tests_every_supported_python_with_the_test_lock() -> None:
    job = workflow("ci.yml")["jobs"]["test"]
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13", "3.14"]
    setup = step_using(WORKFLOWS / "ci.yml", "actions/setup-python")["with"]
    assert setup["python-version"] == "${{ matrix.python }}"
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "pip install --quiet --require-hashes -r $(TEST_LOCK)" in makefile
    assert "TEST_LOCK := requirements-test.lock" in makefile


def locked(name: str) -> dict[str, str]:
    """Package name to pinned version; every pin carries hashes."""
    text = (REPO / name).read_text(encoding="utf-8")
    found = re.findall(r"^([a-z0-9][a-z0-9._-]*)==(\S+)", text, re.M)
    pins = dict(found)
    assert pins and len(found) == len(pins)  # one pin per package, for every platform
    for block in re.split(r"\n(?=[a-z0-9])", text.split("\n", 2)[2]):
        assert "--hash=sha256:" in block, block[:80]
    return pins


def test_locks_pin_every_dependency_with_hashes_and_agree() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[\[<>=~! ;]", r, maxsplit=1)[0].lower().replace("_", "-")
                for r in requirements}

    run, test = locked("requirements.lock"), locked("requirements-test.lock")
    assert names(project["dependencies"]) <= set(run)
    assert names(project["optional-dependencies"]["test"]) <= set(test)
    assert all(test[name] == version for name, version in run.items())


def pages_artifact(path: Path, site: Path, workdir: Path) -> list[str]:
    """The files the workflow at path would publish from a built site: its assembling step
    run as written, then archived as upload-pages-artifact v5 archives it."""
    shutil.copytree(site, workdir / "public", copy_function=os.link)
    assemble = next(s for s in steps(path) if s.get("name") == "Assemble the Pages artifact")
    subprocess.run(["bash", "-e", "-c", assemble["run"]], cwd=workdir, check=True)
    upload = step_using(path, "actions/upload-pages-artifact")["with"]
    hidden = str(upload.get("include-hidden-files", "false")).lower() == "true"
    archive = workdir / "artifact.tar"
    subprocess.run(["tar", "--dereference", "--hard-dereference", "--directory",
                    str(workdir / upload["path"]), "-cf", str(archive), "--exclude=.git",
                    "--exclude=.github", *([] if hidden else ["--exclude=.[^/]*"]), "."],
                   check=True)
    with tarfile.open(archive) as tar:
        return [m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()]


@pytest.mark.parametrize("path", PUBLISH_WORKFLOWS, ids=["desk", "starter"])
def test_publish_workflow_schedule_triggers_permissions_concurrency(path: Path) -> None:
    data = workflow(path)
    on = triggers(data)
    cron = on["schedule"][0]["cron"]
    minute, hour, *_ = cron.split()
    assert hour == "*" and minute.isdigit() and 0 < int(minute) < 60  # hourly, not on the hour
    assert on["push"]["branches"] == ["main"]
    if path.parent == WORKFLOWS:
        assert {"content/**", "templates/**", "static/**", "desk/**",
                "requirements.lock"} <= set(on["push"]["paths"])
    assert "now" in on["workflow_dispatch"]["inputs"]
    assert data["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    assert data["concurrency"]["group"] == "publish"
    assert data["concurrency"]["cancel-in-progress"] is False
    build = data["jobs"]["build"]
    uses = [step.get("uses", "").split("@")[0] for step in build["steps"]]
    assert uses.index("actions/checkout") < uses.index("actions/upload-pages-artifact")
    assert "actions/cache" in uses and "actions/setup-python" in uses
    runs = " ".join(step.get("run", "") for step in build["steps"])
    assert "desk check" not in runs  # the build holds back a bad story itself
    at_build = next(i for i, s in enumerate(build["steps"]) if "desk build" in s.get("run", ""))
    at_assemble = next(i for i, s in enumerate(build["steps"])
                       if s.get("name") == "Assemble the Pages artifact")
    assert uses.index("actions/configure-pages") < at_build < at_assemble < uses.index(
        "actions/upload-pages-artifact")
    assert all("timeout-minutes" in job for job in data["jobs"].values())
    assert data["jobs"]["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages@")


def run_step(step: dict[str, Any], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A workflow's run step as the runner runs it (bash -e), with this desk on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(["bash", "--noprofile", "--norc", "-e", "-c", step["run"]], cwd=cwd,
                          env=os.environ | {"PATH": path} | env, capture_output=True,
                          text=True)


@pytest.mark.parametrize("path", ALL_PUBLISH_WORKFLOWS, ids=["pages", "s3", "starter"])
def test_publish_holds_back_bad_stories_and_fails_the_run_after_the_deploy(
        path: Path, tmp_path: Path) -> None:
    jobs = workflow(path)["jobs"]
    name, job = next((n, j) for n, j in jobs.items()
                     if any(s.get("id") == "build" for s in j["steps"]))
    build = next(s for s in job["steps"] if s.get("id") == "build")
    assert "desk build --hold-back" in build["run"]
    assert not any("desk check" in s.get("run", "") for s in steps(path))
    # The run is failed by the last step, after the deploy, when stories were held back.
    last = list(jobs.values())[-1]["steps"]
    deploys = [i for i, s in enumerate(last) if s.get("uses", "").startswith(
        "actions/deploy-pages@") or "desk deploy --to" in s.get("run", "")]
    assert deploys and deploys[-1] < len(last) - 1
    fail = last[-1]
    if last is job["steps"]:
        assert fail["if"] == "steps.build.outputs.held-back == 'true'"
    else:
        assert job["outputs"]["held-back"] == "${{ steps.build.outputs.held-back }}"
        assert list(jobs.values())[-1]["needs"] == name
        assert fail["if"] == "needs.build.outputs.held-back == 'true'"

    # The build step as written, on a new site with a new story that fails its checks.
    assert CliRunner().invoke(main, ["init", str(tmp_path / "site"), "--base-url",
                                     "https://news.example.org"]).exit_code == 0
    site = tmp_path / "site"
    broken = make_story(40)
    broken["key_facts"][0]["cites"][0]["manifest_id"] = "nowhere"
    write_story(site / "content", broken)
    write_story(site / "content", make_story(41))
    output = tmp_path / "output"
    env = {"BASE_URL": "https://news.example.org", "BUILD_NOW": NOW,
           "GITHUB_OUTPUT": str(output), "GITHUB_ACTIONS": "true"}
    result = run_step(build, site, **env)
    assert result.returncode == 0, result.stderr
    assert output.read_text() == "held-back=true\n"
    assert "::error file=content/stories/2026-11-14/story-number-40.json," in result.stdout
    assert (site / "public/stories/2026-11-14/story-number-41/index.html").is_file()
    assert not (site / "public/stories/2026-11-14/story-number-40").exists()
    assert json.loads((site / "publish-report.json").read_text())["held_back"]
    result = run_step(fail, site)
    assert result.returncode == 1 and result.stdout.startswith("::error title=")
    # A template error stops the run at the build.
    (site / "templates").mkdir()
    (site / "templates" / "story.html").write_text("{% if %}\n")
    output.unlink()
    result = run_step(build, site, **env)
    assert result.returncode == 1 and output.read_text() == "held-back=false\n"


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
    assert data["refused"] == [] and set(data["timings"]) >= {"state", "load", "render", "write", "save"}
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
    """The shipped content, a generated corpus (one story with two local pictures and a
    remote one), and a site with a story moved, one withdrawn and a draft shown (built
    with --drafts, as for a staging site)."""
    root = tmp_path_factory.mktemp("gates")
    sites = []
    for name, content in (("sample", REPO / "content"), ("corpus", root / "corpus-content"),
                          ("lifecycle", root / "lifecycle-content")):
        if name == "corpus":
            make_corpus(content, 30)
            write_story(content, pictured_story(100, content))
            # A change record of every kind, on the story page and in the log.
            write_story(content, make_story(101, corrections=[
                {"at": f"2026-11-14T2{n}:00:00Z", "text": f"A change of kind {kind}.",
                 "kind": kind} for n, kind in enumerate(CHANGE_KINDS)]))
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


def test_pages_artifact_keeps_well_known_and_leaves_out_desk_s_marker(
        sample_sites: list[Path], tmp_path: Path) -> None:
    site = sample_sites[0]
    assert (site / ".desk-site").is_file() and (site / ".well-known" / "reuse.json").is_file()
    for n, path in enumerate(PUBLISH_WORKFLOWS):
        files = pages_artifact(path, site, tmp_path / str(n))
        assert ".well-known/reuse.json" in files and "index.html" in files
        assert ".desk-site" not in files
        assert [f for f in files if any(p.startswith(".") for p in f.split("/"))] == [
            ".well-known/desk-urls.json", ".well-known/reuse.json", ".well-known/publisher.json"]
        assert (site / ".desk-site").is_file()  # the built site itself stays desk's


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


# The current Nu HTML checker: npm's vnu-jar, which `make test` installs into .tools/.
VNU_JAR = Path(os.environ.get("DESK_VNU_JAR",
                              REPO / ".tools/node_modules/vnu-jar/build/dist/vnu.jar"))
# Java's start is most of a check of a few sites: its quick compiler alone halves it (the
# same checks; its larger frames need a larger stack for the HTML schema's evaluation).
VNU_JAVA = ("-Xss8m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def nu_errors(*sites: Path) -> list[dict[str, Any]]:
    """Every error the Nu HTML checker finds in the sites' HTML files (one run for all)."""
    for needed, why in ((shutil.which("java"), "Java"), (VNU_JAR.is_file() or None, "vnu.jar")):
        if needed is None:
            if os.environ.get("CI"):
                pytest.fail(f"CI must install {why} for the Nu HTML checker (see .ci/run)")
            pytest.skip(f"{why} is not installed (make test installs vnu.jar with npm)")
    result = subprocess.run(["java", *VNU_JAVA, "-jar", str(VNU_JAR), "--errors-only",
                             "--format", "json", "--skip-non-html", *map(str, sites)],
                            capture_output=True, text=True)
    report = json.loads(result.stderr or result.stdout)
    errors = [m for m in report["messages"] if m["type"] in ("error", "non-document-error")]
    assert (result.returncode != 0) == bool(errors), result.stderr
    return errors


def test_html_validity_gate(sample_sites: list[Path], tmp_path: Path) -> None:
    for site in sample_sites:
        assert len(list(site.rglob("*.html"))) > 8
    broken = tmp_path / "broken"
    shutil.copytree(sample_sites[0], broken)
    page = broken / "404.html"
    page.write_text(page.read_text().replace("<main", '<main id="main2"><p id="x"></p><p id="x">'))
    # One run of the checker for the sites and the broken copy: an error of any file but
    # the broken copy's (or of none) is the sites'.
    errors = nu_errors(*sample_sites, broken)
    found = [e for e in errors if e.get("url", "").startswith(f"file:{broken}/")]
    others = [e for e in errors if e not in found]
    assert others == [], "\n".join(f"{e.get('url')}:{e.get('lastLine')}: {e['message']}"
                                    for e in others)
    messages = [e["message"] for e in found]
    assert any(m.startswith("Duplicate ID") and "x" in m for m in messages), messages


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
