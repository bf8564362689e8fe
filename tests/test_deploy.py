"""`desk deploy` against a real S3 server on loopback: `rclone serve s3` over a folder.

The server keeps each bucket as a folder of plain files, so the tests read what was
deployed straight from disk. It keeps Content-Type and Cache-Control in memory while it
runs (a restart forgets them), which is all the header test needs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from click.testing import CliRunner
from conftest import Result, tree
from ports import lasting_port
from storygen import REPO, make_corpus, make_story, write_story

from desk.cli import main
from desk.config import ConfigError, load_config, load_deploy_config
from desk.deploy.headers import content_type
from desk.deploy.plan import MANIFEST
from desk.deploy.target import Target
from desk.render.kinds import KINDS, kind_of

KEY, SECRET = "desk-test-key-0001", "desk-test-secret-0001"
BUCKET = "desk"
NOW = "2026-11-15T00:00:00Z"
RCLONE = Path(sys.executable).parent / "rclone"


@dataclass
class Server:
    url: str
    root: Path

    def client(self) -> Any:
        return boto3.session.Session().client(
            "s3", endpoint_url=self.url, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
            region_name="us-east-1")

    def folder(self, prefix: str) -> Path:
        return self.root / BUCKET / prefix


def listed_apart(server: Server, prefix: str, files: Mapping[str, bytes]) -> set[str]:
    """The site's files that the server lists with another size or MD5 than their own:
    those a deploy must upload. rclone's server has, once in many runs, listed a file a
    deploy had just written as other than it; S3's listings are consistent."""
    listed: dict[str, tuple[int, str]] = {}
    pages = server.client().get_paginator("list_objects_v2")
    for page in pages.paginate(Bucket=BUCKET, Prefix=f"{prefix}/"):
        for item in page.get("Contents", []):
            listed[item["Key"].removeprefix(f"{prefix}/")] = (item["Size"],
                                                               item["ETag"].strip('"'))
    return {path for path, data in files.items()
            if listed.get(path) != (len(data), hashlib.md5(data).hexdigest())}


def wait_until_serving(server: Server, process: subprocess.Popen[bytes]) -> None:
    """Poll with a real request until the server answers (at most 20 s)."""
    client = server.client()
    deadline = time.monotonic() + 20
    while True:
        try:
            client.list_buckets()
            return
        except Exception:  # noqa: BLE001 - not up yet: connection refused and the like
            if process.poll() is not None or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """rclone's S3 server on a free loopback port, with one empty bucket."""
    root = tmp_path_factory.mktemp("s3")
    store = root / "store"
    (store / BUCKET).mkdir(parents=True)
    port = lasting_port()  # let go until rclone takes it
    with (root / "rclone.log").open("wb") as log:
        # The tests change the bucket through the server only: it caches its listings.
        process = subprocess.Popen(
            [str(RCLONE), "serve", "s3", "--addr", f"127.0.0.1:{port}", "--auth-key",
             f"{KEY},{SECRET}", str(store)],
            stdout=log, stderr=subprocess.STDOUT)
        server = Server(f"http://127.0.0.1:{port}", store)
        try:
            wait_until_serving(server, process)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Credentials the way a runner has them: environment variables, nothing else."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


class Site:
    """A content folder and the site desk builds from it."""

    def __init__(self, desk: Callable[..., Result], root: Path, stories: int) -> None:
        self.desk = desk
        self.content = root / "content"
        self.out = root / "public"
        self.cache = root / "cache"
        self.stories = make_corpus(self.content, stories)

    def build(self) -> dict[str, bytes]:
        result = self.desk("build", "--content", str(self.content), "--out", str(self.out),
                           "--now", NOW, "--jobs", "1", "--cache-dir", str(self.cache))
        assert result.exit_code == 0, result.stderr
        files = tree(self.out)
        del files[".desk-site"]
        return files

    def story_file(self, n: int) -> Path:
        data = self.stories[n]
        return self.content / "stories" / data["published_at"][:10] / f"{data['slug']}.json"

    def story_folder(self, n: int) -> str:
        data = self.stories[n]
        return f"stories/{data['published_at'][:10]}/{data['slug']}/"


def run_deploy(desk: Callable[..., Result], server: Server, site: Site, prefix: str,
               *flags: str) -> tuple[Result, dict[str, Any]]:
    report = site.out.parent / "deploy-report.json"
    report.unlink(missing_ok=True)
    result = desk("deploy", "--to", f"s3://{BUCKET}/{prefix}", "--endpoint-url", server.url,
                  "--site", str(site.out), "--report", str(report), "--jobs", "4", *flags)
    return result, json.loads(report.read_text()) if report.exists() else {}


def config_with(tmp_path: Path, deploy_table: str) -> Path:
    """The repository's pyproject.toml with a [tool.desk.deploy] table added."""
    project = tmp_path / "pyproject.toml"
    shutil.copy(REPO / "pyproject.toml", project)
    with project.open("a", encoding="utf-8") as handle:
        handle.write("\n[tool.desk.deploy]\n" + deploy_table)
    return project


def stored(server: Server, prefix: str) -> dict[str, bytes]:
    """What the bucket holds below prefix, as the server keeps it on disk."""
    return tree(server.folder(prefix))


def live(server: Server, prefix: str, report: dict[str, Any]) -> dict[str, bytes]:
    """What the bucket serves as the site: all but the manifest and the replaced
    content-hashed files kept a while."""
    kept = set(report["planned"]["kept"])
    return {p: data for p, data in stored(server, prefix).items()
            if p != MANIFEST and p not in kept}


def kinds_in_order(log: list[list[str]]) -> bool:
    order = [KINDS.index(kind_of(path)) for action, path in log if action == "put"]
    return order == sorted(order)


def test_first_deploy_uploads_everything_and_a_second_nothing(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 6)
    files = site.build()
    result, report = run_deploy(desk, s3, site, "first")
    assert result.exit_code == 0, result.stderr
    assert report["uploaded"] == len(files) and report["deleted"] == 0
    assert report["bytes"] == sum(len(data) for data in files.values())
    assert live(s3, "first", report) == files and report["kept"] == 0
    assert ".well-known/reuse.json" in stored(s3, "first")
    assert ".desk-site" not in stored(s3, "first")
    assert kinds_in_order(report["log"])
    assert f"{len(files)} uploaded" in result.stdout

    apart = listed_apart(s3, "first", files)
    result, report = run_deploy(desk, s3, site, "first")
    assert result.exit_code == 0
    assert (report["uploaded"], report["deleted"], report["unchanged"]) == (
        len(apart), 0, len(files) - len(apart))

    # Without the manifest the listing's ETags tell the same.
    s3.client().delete_object(Bucket=BUCKET, Key=f"first/{MANIFEST}")
    result, report = run_deploy(desk, s3, site, "first")
    assert (report["uploaded"], report["unchanged"]) == (0, len(files))
    assert MANIFEST in stored(s3, "first")


def test_an_edited_story_uploads_what_changed_and_a_removed_one_goes_last(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 8)
    before = site.build()
    assert run_deploy(desk, s3, site, "edit")[0].exit_code == 0

    edited = site.stories[2] | {"headline": "A corrected headline"}
    write_story(site.content, edited)
    site.story_file(5).unlink()
    after = site.build()
    changed = {p for p in after if before.get(p) != after[p]}
    removed = set(before) - set(after)
    result, report = run_deploy(desk, s3, site, "edit")
    assert result.exit_code == 0, result.stderr

    assert set(report["log"][i][1] for i in range(report["uploaded"])) == changed
    pages = ("index.html", "index.json", "index.md")
    # Among the stories only the edited one's pages; the lists and feeds that changed.
    assert {p for p in changed if kind_of(p) == "story"} == {
        site.story_folder(2) + name for name in pages}
    assert {"index.html", "feed.xml", "sitemap.xml", "n/markets/index.html"} <= changed
    replaced = {p for p in removed if kind_of(p) == "asset"}  # Pagefind's renamed chunks
    assert replaced and removed - replaced == {site.story_folder(5) + name for name in pages}
    assert set(report["planned"]["deletes"]) == removed - replaced
    assert set(report["planned"]["kept"]) == replaced <= set(stored(s3, "edit"))
    assert report["unchanged"] == len(after) - len(changed)
    actions = [action for action, _ in report["log"]]
    assert actions == ["put"] * len(changed) + ["delete"] * len(removed - replaced)
    assert kinds_in_order(report["log"])
    assert live(s3, "edit", report) == after

    # Kept while pages in caches may still link to them; a later deploy deletes them.
    result, report = run_deploy(desk, s3, site, "edit")
    assert set(report["planned"]["kept"]) == replaced and report["deleted"] == 0
    result = CliRunner().invoke(main, [
        "deploy", "--config", str(config_with(tmp_path, "keep_replaced_minutes = 0\n")),
        "--to", f"s3://{BUCKET}/edit", "--endpoint-url", s3.url, "--site", str(site.out)])
    assert result.exit_code == 0, result.output
    assert f"{len(replaced)} deleted" in result.stdout
    assert {p: d for p, d in stored(s3, "edit").items() if p != MANIFEST} == after


def test_objects_carry_content_type_and_cache_control(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 3)
    files = site.build()
    assert run_deploy(desk, s3, site, "headers")[0].exit_code == 0
    css = next(p for p in files if p.startswith("static/") and p.endswith(".css"))
    short = "public, max-age=300"
    expected = {
        site.story_folder(1) + "index.html": ("text/html; charset=utf-8", short),
        site.story_folder(1) + "index.json": ("application/json; charset=utf-8", short),
        site.story_folder(1) + "index.md": ("text/markdown; charset=utf-8", short),
        "index.html": ("text/html; charset=utf-8", short),
        "feed.xml": ("application/rss+xml; charset=utf-8", short),
        "atom.xml": ("application/atom+xml; charset=utf-8", short),
        "feed.json": ("application/feed+json; charset=utf-8", short),
        "n/climate/feed.xml": ("application/rss+xml; charset=utf-8", short),
        "sitemap.xml": ("application/xml; charset=utf-8", short),
        "robots.txt": ("text/plain; charset=utf-8", short),
        ".well-known/reuse.json": ("application/json; charset=utf-8", short),
        "license.xml": ("application/rsl+xml; charset=utf-8", short),
        css: ("text/css; charset=utf-8", "public, max-age=31536000, immutable"),
        "static/og-default.png": ("image/png", "public, max-age=3600"),
    }
    client = s3.client()
    for path, (kind, cache) in expected.items():
        head = client.head_object(Bucket=BUCKET, Key=f"headers/{path}")
        assert (head["ContentType"], head.get("CacheControl")) == (kind, cache), path


def test_dry_run_changes_nothing(desk: Callable[..., Result], s3: Server,
                                 tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 4)
    site.build()
    assert run_deploy(desk, s3, site, "dry")[0].exit_code == 0
    write_story(site.content, site.stories[1] | {"dek": "A new dek."})
    site.story_file(3).unlink()
    site.build()
    before = stored(s3, "dry")
    result, report = run_deploy(desk, s3, site, "dry", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert stored(s3, "dry") == before
    assert report["uploaded"] == report["deleted"] == 0 and report["log"] == []
    assert site.story_folder(1) + "index.html" in report["planned"]["uploads"]
    assert site.story_folder(3) + "index.html" in report["planned"]["deletes"]
    assert "nothing was changed" in result.stdout


def test_max_deletes_stops_the_deploy_before_it_changes_anything(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 6)
    before = site.build()
    assert run_deploy(desk, s3, site, "cap")[0].exit_code == 0
    site.story_file(1).unlink()
    site.story_file(4).unlink()  # the last of its newsroom: its pages and feeds go too
    after = site.build()
    gone = {p for p in set(before) - set(after) if kind_of(p) != "asset"}
    assert len(gone) > 6
    unchanged = stored(s3, "cap")
    result, report = run_deploy(desk, s3, site, "cap", "--max-deletes", str(len(gone) - 1))
    assert result.exit_code == 1
    assert f"would delete {len(gone)} objects, more than the limit of {len(gone) - 1}" in (
        result.stderr) and "nothing was uploaded or deleted" in result.stderr
    assert stored(s3, "cap") == unchanged
    assert report["ok"] is False and set(report["planned"]["deletes"]) == gone

    # The search index chunks that new ones replaced do not count against the limit.
    report_file = tmp_path / "cap.json"
    result = CliRunner().invoke(main, [
        "deploy", "--config", str(config_with(tmp_path, "keep_replaced_minutes = 0\n")),
        "--to", f"s3://{BUCKET}/cap", "--endpoint-url", s3.url, "--site", str(site.out),
        "--max-deletes", str(len(gone)), "--report", str(report_file)])
    assert result.exit_code == 0, result.output
    report = json.loads(report_file.read_text())
    assert report["deleted"] > len(gone) and live(s3, "cap", report) == after


def test_a_failed_upload_leaves_the_old_site_and_a_rerun_finishes(
        desk: Callable[..., Result], s3: Server, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    site = Site(desk, tmp_path, 5)
    before = site.build()
    assert run_deploy(desk, s3, site, "fail")[0].exit_code == 0
    old = stored(s3, "fail")
    site.stories.append(make_story(50, "climate"))
    write_story(site.content, site.stories[-1])
    after = site.build()
    # An object where the new story's folder must go: the server refuses its pages.
    blocker = "fail/" + site.story_folder(-1).rstrip("/")
    s3.client().put_object(Bucket=BUCKET, Key=blocker, Body=b"in the way\n")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    result, report = run_deploy(desk, s3, site, "fail")
    assert result.exit_code == 1 and "run the deploy again" in result.stderr
    now = stored(s3, "fail")
    assert now["index.html"] == old["index.html"] != after["index.html"]  # lists not touched
    assert now[MANIFEST] == old[MANIFEST]
    assert now[blocker.removeprefix("fail/")] == b"in the way\n"  # nothing deleted
    assert report["failed"] == 3 and not any(a == "delete" for a, _ in report["log"])
    assert set(before) <= set(now)

    s3.client().delete_object(Bucket=BUCKET, Key=blocker)
    # The rerun is an ordinary deploy, with the client's usual retries: concurrent uploads
    # into the folder the blocker left can meet a transient server error on a busy machine.
    monkeypatch.delenv("AWS_MAX_ATTEMPTS")
    result, report = run_deploy(desk, s3, site, "fail")
    assert result.exit_code == 0, result.stderr
    assert live(s3, "fail", report) == after
    assert site.story_folder(-1) + "index.html" in {p for _, p in report["log"]}


def test_an_object_changed_behind_deploys_back_is_uploaded_again(
        desk: Callable[..., Result], s3: Server, tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 3)
    files = site.build()
    assert run_deploy(desk, s3, site, "stale")[0].exit_code == 0
    s3.client().put_object(Bucket=BUCKET, Key="stale/robots.txt", Body=b"User-agent: *\n")
    apart = listed_apart(s3, "stale", files)
    assert "robots.txt" in apart
    result, report = run_deploy(desk, s3, site, "stale")
    assert result.exit_code == 0
    assert sorted(p for _, p in report["log"]) == sorted(apart)
    assert stored(s3, "stale")["robots.txt"] == files["robots.txt"]


def test_job_summary_under_github_actions(s3: Server, tmp_path: Path,
                                          desk: Callable[..., Result]) -> None:
    site = Site(desk, tmp_path, 2)
    site.build()
    summary = tmp_path / "summary.md"
    result = CliRunner().invoke(main, [
        "deploy", "--config", str(REPO / "pyproject.toml"), "--to", f"s3://{BUCKET}/summary",
        "--endpoint-url", s3.url, "--site", str(site.out)],
        env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    text = summary.read_text()
    files = len(tree(site.out)) - 1
    assert "## desk deploy" in text and f"| {files} | 0 | 0 | 0 |" in text
    assert "| story | 6 |" in text


def test_usage_errors(desk: Callable[..., Result], tmp_path: Path) -> None:
    assert desk("deploy", "--to", "https://bucket", "--site", str(tmp_path)).exit_code == 2
    result = desk("deploy", "--to", "s3://bucket", "--site", str(tmp_path))
    assert result.exit_code == 2 and "not a site built by desk build" in result.stderr
    with pytest.raises(ValueError):
        Target.parse("s3://bucket/../up")
    assert Target.parse("s3://my-bucket//a/b/").prefix == "a/b/"
    assert Target.parse("s3://my-bucket").key("index.html") == "index.html"


def test_deploy_settings_in_pyproject(tmp_path: Path) -> None:
    project = config_with(tmp_path, 'max_deletes = 7\n\n[tool.desk.deploy.cache_control]\n'
                          'story = "public, max-age=60"\n')
    settings = load_deploy_config(project)
    assert settings.max_deletes == 7 and settings.cache_control.story == "public, max-age=60"
    assert settings.cache_control.asset == "public, max-age=31536000, immutable"
    assert load_config(project).title == "Hanging Context"  # the build ignores the table
    assert load_deploy_config(REPO / "pyproject.toml").max_deletes == 1000
    with project.open("a", encoding="utf-8") as handle:
        handle.write('pages = "no-store"\n')
    with pytest.raises(ConfigError, match="tool.desk.deploy.cache_control.pages"):
        load_deploy_config(project)


def test_kinds_and_content_types() -> None:
    assert kind_of("static/site.0aa549798d.css") == "asset"
    assert kind_of("static/site.css") == kind_of("static/og-default.png") == "static"
    assert kind_of("pagefind/fragment/en_149e1c7.pf_fragment") == "asset"
    assert kind_of("pagefind/pagefind.en_b18efa465d.pf_meta") == "asset"
    assert kind_of("pagefind/pagefind-entry.json") == kind_of("pagefind/pagefind.js") == "search"
    assert kind_of("stories/2026-11-14/x/index.md") == "story"
    assert kind_of("n/climate/page/2/index.html") == kind_of("search/index.html") == "list"
    assert kind_of("404.html") == kind_of("terms/reuse/index.html") == "list"
    for path in ("feed.xml", "n/climate/feed.json", "sitemap.xml", "sitemap-2.xml",
                 "news-sitemap.xml", "llms.txt", "llms-full.txt", "robots.txt",
                 ".well-known/reuse.json", "license.xml"):
        assert kind_of(path) == "feed", path
    assert content_type("pagefind/wasm.en.pagefind") == "application/octet-stream"
    assert content_type("pagefind/index/en_1.pf_index") == "application/octet-stream"
    assert content_type("a/b") == "application/octet-stream"
    # The RSL licence file by its path; another file of that name is plain XML.
    assert content_type("license.xml") == "application/rsl+xml; charset=utf-8"
    assert content_type("n/license.xml") == "application/xml; charset=utf-8"
    # The content's pictures: content-hashed names, served as what they are.
    for path, kind in (("media/rack.0123456789ab.jpg", "image/jpeg"),
                       ("media/rack.0123456789ab.960w.webp", "image/webp"),
                       ("media/chart.0123456789ab.png", "image/png")):
        assert kind_of(path) == "asset" and content_type(path) == kind, path


def workflow(name: str) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(
        (REPO / ".github" / "workflows" / name).read_text(encoding="utf-8"))
    return data


# The first major version of each action that runs on Node 24.
NODE24 = {"actions/checkout": 5, "actions/setup-python": 6, "actions/cache": 5,
          "actions/cache/restore": 5, "actions/cache/save": 5,
          "actions/upload-artifact": 6, "aws-actions/configure-aws-credentials": 6}


def test_publish_s3_workflow_matches_publish_and_deploys() -> None:
    s3flow, pages = workflow("publish-s3.yml"), workflow("publish.yml")
    on, pages_on = s3flow.get("on", s3flow.get(True)), pages.get("on", pages.get(True))
    assert on["schedule"] == pages_on["schedule"]
    assert on["push"] == pages_on["push"] and "now" in on["workflow_dispatch"]["inputs"]
    assert s3flow["concurrency"] == pages["concurrency"]
    assert s3flow["permissions"] == {"contents": "read", "id-token": "write"}
    steps = [step for job in s3flow["jobs"].values() for step in job["steps"]]
    uses = [step["uses"] for step in steps if "uses" in step]
    for action in uses:
        name, _, major = action.partition("@")
        assert name in NODE24 and int(major.lstrip("v")) >= NODE24[name], action
    runs = " ".join(step.get("run", "") for step in steps)
    assert runs.index("desk build --hold-back") < runs.index("desk deploy --to")
    assert "secrets.AWS_SECRET_ACCESS_KEY" in json.dumps(s3flow)
    assert all("timeout-minutes" in job for job in s3flow["jobs"].values())


def test_missing_credentials_are_a_clear_failure(
        desk: Callable[..., Result], s3: Server, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    site = Site(desk, tmp_path, 1)
    site.build()
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result, report = run_deploy(desk, s3, site, "nocreds")
    assert result.exit_code == 1
    assert "cannot list s3://desk/nocreds/: Unable to locate credentials" in result.stderr
    assert report["ok"] is False and not (s3.root / BUCKET / "nocreds").exists()


# A process that holds a site folder's lock as a build does, until its input closes.
SITE_HOLDER = """
import sys
from pathlib import Path
from desk.build.lock import guarded_by, writing
with writing(guarded_by(Path(sys.argv[1]), None), "build"):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_deploy_waits_for_the_build_of_its_folder(desk: Callable[..., Result], s3: Server,
                                                    tmp_path: Path) -> None:
    site = Site(desk, tmp_path, 3)
    files = site.build()
    holder = subprocess.Popen([sys.executable, "-c", SITE_HOLDER, str(site.out)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    command = [sys.executable, "-m", "desk", "deploy", "--config", str(REPO / "pyproject.toml"),
               "--to", f"s3://{BUCKET}/waits", "--endpoint-url", s3.url, "--site",
               str(site.out)]
    try:
        refused = subprocess.run([*command, "--no-wait"], capture_output=True, text=True,
                                 timeout=120)
        assert refused.returncode == 4, refused.stderr
        assert f"locked by the build of PID {holder.pid}" in refused.stderr
        assert stored(s3, "waits") == {}
        deploy = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        assert deploy.stderr is not None
        waiting = deploy.stderr.readline()
        assert waiting.startswith(f"desk deploy: waiting for the build of PID {holder.pid} on ")
        assert stored(s3, "waits") == {}  # nothing uploaded while the build holds the site
    finally:
        holder.kill()
        holder.wait()
    out, err = deploy.communicate(timeout=120)
    assert deploy.returncode == 0, err
    assert files.items() <= stored(s3, "waits").items()
