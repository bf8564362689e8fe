"""`desk announce` against a small HTTP server on 127.0.0.1 that records every request:
IndexNow's submissions (body, content type, URL list, key) and WebSub pings, a hub that
answers 500 and one that never answers; the key file and the feeds' hub and self links,
read back with feedparser; the URLs of a real deploy to the loopback S3 server."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import feedparser
import pytest
from click.testing import CliRunner
from conftest import Result
from storygen import REPO, make_corpus, make_story, write_story
from test_deploy import BUCKET, Server, aws_env, s3
from test_publish import run_step, workflow

from desk.cli import main
from desk.config import ConfigError, load_config
from desk.publish.announce import BATCH, Announcement

__all__ = ["aws_env", "s3"]  # fixtures, used by name
NOW = "2026-11-15T00:00:00Z"
KEY = "0123456789abcdef-key"
BASE = "https://news.example.org"


@dataclass
class Recorded:
    path: str
    content_type: str
    body: bytes


@dataclass
class Engine:
    """What the server received, and its address."""

    url: str
    requests: list[Recorded] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def at(self, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.path == path]


@pytest.fixture
def engine() -> Iterator[Engine]:
    """An IndexNow endpoint (/indexnow: 202), a hub (/hub: 204), a failing hub
    (/hub500: 500) and one that never answers (/silent: holds the request until the
    test ends, at most 30 s)."""
    state = Engine("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server interface
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.requests.append(Recorded(self.path, self.headers.get("Content-Type", ""),
                                           body))
            if self.path == "/silent":
                state.release.wait(30)
                return
            self.send_response({"/indexnow": 202, "/hub": 204}.get(self.path, 500))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests go straight to the loopback server."""
    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)


def site_settings(folder: Path, engine: Engine, hub: str = "/hub", limit: float = 20,
                  endpoint: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    settings = folder / "desk.toml"
    settings.write_text(
        f'base_url = "{BASE}"\ntitle = "Example News"\nindexnow_key = "{KEY}"\n'
        f'websub_hub = "{engine.url}{hub}"\n\n[reuse]\nversion = "1"\n'
        'summary = "Free to quote."\n\n[announce]\n'
        + (f'indexnow_endpoint = "{engine.url}/indexnow"\n' if endpoint else "")
        + f"time_limit_seconds = {limit}\n", encoding="utf-8")
    return settings


def run(settings: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    result = CliRunner().invoke(main, [args[0], "--config", str(settings), *args[1:]],
                                env=env, catch_exceptions=False)
    return Result(result.exit_code, result.stdout, result.stderr)


def build(settings: Path, *flags: str) -> Path:
    result = run(settings, "build", "--now", NOW, "--jobs", "1", "--no-search", *flags)
    assert result.exit_code == 0, result.stderr
    return settings.parent / "public"


def test_key_file_and_the_feeds_hub_and_self_links(engine: Engine, tmp_path: Path) -> None:
    settings = site_settings(tmp_path / "site", engine)
    make_corpus(tmp_path / "site" / "content", 3)
    public = build(settings)
    assert (public / f"{KEY}.txt").read_bytes() == KEY.encode()
    hub = f"{engine.url}/hub"
    for path in ("feed.xml", "atom.xml", "n/climate/feed.xml", "n/climate/atom.xml"):
        parsed = feedparser.parse((public / path).read_bytes())
        assert not parsed.bozo, (path, parsed.bozo_exception)
        links = {link["rel"]: link["href"] for link in parsed.feed.links}
        assert links["hub"] == hub and links["self"] == f"{BASE}/{path}", path
    for path in ("feed.json", "n/climate/feed.json"):
        data = json.loads((public / path).read_text())
        assert data["hubs"] == [{"type": "WebSub", "url": hub}]
        assert data["feed_url"] == f"{BASE}/{path}"

    # Without the settings: no key file, no hub links (the default feeds stay as they were).
    plain = tmp_path / "plain" / "desk.toml"
    plain.parent.mkdir()
    plain.write_text(settings.read_text().replace(f'indexnow_key = "{KEY}"\n', "")
                     .replace(f'websub_hub = "{hub}"\n', ""))
    shutil.copytree(tmp_path / "site" / "content", tmp_path / "plain" / "content")
    public = build(plain)
    assert not (public / f"{KEY}.txt").exists()
    feed = feedparser.parse((public / "feed.xml").read_bytes())
    assert "hub" not in {link["rel"] for link in feed.feed.links}
    assert "hubs" not in json.loads((public / "feed.json").read_text())


def test_bad_announce_settings_are_clear(tmp_path: Path) -> None:
    for line, message in (('indexnow_key = "short"', "8 to 128 characters"),
                          ('indexnow_key = "../../etc"', "8 to 128 characters"),
                          ('websub_hub = "ftp://hub"', r"websub_hub: must be an absolute http\(s\) URL")):
        settings = tmp_path / "desk.toml"
        settings.write_text(f'base_url = "{BASE}"\n{line}\n')
        with pytest.raises(ConfigError, match=message):
            load_config(settings)
    settings.write_text(f'base_url = "{BASE}"\n[announce]\ntime_limit_seconds = 0\n')
    result = run(settings, "announce", "--urls", str(settings))
    assert result.exit_code == 2 and "announce.time_limit_seconds" in result.stderr


def deploy(settings: Path, s3: Server, report: Path) -> dict[str, Any]:
    result = run(settings, "deploy", "--to", f"s3://{BUCKET}/announce", "--endpoint-url",
                 s3.url, "--report", str(report), "--jobs", "4")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(report.read_text())
    return data


def test_announces_what_a_deploy_changed(engine: Engine, s3: Server, tmp_path: Path) -> None:
    settings = site_settings(tmp_path / "site", engine)
    stories = make_corpus(tmp_path / "site" / "content", 6)
    public = build(settings)
    report = tmp_path / "deploy-report.json"
    deploy(settings, s3, report)
    snapshot = tmp_path / "before"
    shutil.copytree(public, snapshot, copy_function=os.link)  # as `cp -al` makes it

    edited = stories[2] | {"headline": "A corrected headline"}
    write_story(tmp_path / "site" / "content", edited)
    gone = stories[4]
    content = tmp_path / "site" / "content" / "stories"
    (content / gone["published_at"][:10] / f"{gone['slug']}.json").unlink()
    build(settings)
    deployed = deploy(settings, s3, report)
    summary = tmp_path / "summary.md"
    result = run(settings, "announce", "--deploy-report", str(report),
                 env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.stderr

    story = f"{BASE}/stories/{edited['published_at'][:10]}/{edited['slug']}/"
    newsroom = edited["newsroom"]
    (submitted,) = engine.at("/indexnow")
    assert submitted.content_type == "application/json; charset=utf-8"
    body = json.loads(submitted.body)
    assert body["host"] == "news.example.org" and body["key"] == KEY
    assert body["keyLocation"] == f"{BASE}/{KEY}.txt"
    uploaded = {p for action, p in deployed["log"] if action == "put"}
    deleted = {p for action, p in deployed["log"] if action == "delete"}
    pages = {f"{BASE}/{p.removesuffix('index.html')}" for p in uploaded | deleted
             if p.endswith("index.html")}
    removed = f"{BASE}/stories/{gone['published_at'][:10]}/{gone['slug']}/"
    assert removed in pages  # engines learn sooner that it is gone
    feeds = {f"{BASE}/{p}" for p in uploaded
             if p.rpartition("/")[2] in ("feed.xml", "atom.xml", "feed.json")}
    assert set(body["urlList"]) == pages | feeds and len(body["urlList"]) == len(pages | feeds)
    assert {story, f"{BASE}/", f"{BASE}/n/{newsroom}/"} <= pages
    assert {f"{BASE}/feed.xml", f"{BASE}/n/{newsroom}/atom.xml"} <= feeds
    assert not any(u.endswith((".json", ".md")) and not u.endswith("feed.json")
                   for u in body["urlList"])  # pages and feeds, not their JSON and Markdown
    pinged = engine.at("/hub")
    assert {r.content_type for r in pinged} == {"application/x-www-form-urlencoded"}
    assert sorted(parse_qs(r.body.decode())["hub.url"][0] for r in pinged) == sorted(feeds)
    assert all(parse_qs(r.body.decode())["hub.mode"] == ["publish"] for r in pinged)
    assert "## desk announce" in summary.read_text() and "warning" not in summary.read_text()

    # The same changes found by comparing the built site with the one before it (the
    # GitHub Pages workflow's way), written as a list and sent by a later job.
    listed = tmp_path / "announce.json"
    result = run(settings, "announce", "--site", str(public), "--since", str(snapshot),
                 "--dry-run", "--list", str(listed))
    assert result.exit_code == 0 and "dry run" in result.stderr
    assert len(engine.requests) == 1 + len(pinged)  # nothing sent
    assert Announcement.from_json(json.loads(listed.read_text())).urls == tuple(
        body["urlList"])


def test_failing_and_silent_hubs_are_warnings_within_the_time_limit(
        engine: Engine, tmp_path: Path) -> None:
    feeds = [f"{BASE}/feed.xml", f"{BASE}/atom.xml", f"{BASE}/feed.json"]
    listed = tmp_path / "announce.json"
    listed.write_text(json.dumps(Announcement((f"{BASE}/",), tuple(feeds)).as_json()))
    summary = tmp_path / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}

    settings = site_settings(tmp_path / "a", engine, hub="/hub500")
    result = run(settings, "announce", "--urls", str(listed), env=env)
    assert result.exit_code == 0
    assert len(engine.at("/hub500")) == 3 and len(engine.at("/indexnow")) == 1
    assert result.stdout.count("::warning title=desk announce::WebSub") == 3
    assert "answered 500" in summary.read_text() and "1 of 4 request(s)" in result.stderr

    settings = site_settings(tmp_path / "b", engine, hub="/silent", limit=1.5)
    started = time.monotonic()
    result = run(settings, "announce", "--urls", str(listed), env=env)
    elapsed = time.monotonic() - started
    assert result.exit_code == 0 and elapsed < 10, elapsed
    assert len(engine.at("/silent")) == 1  # the first ping waits out the limit
    assert "timed out" in result.stderr and "time limit was reached" in result.stderr
    assert len(engine.at("/indexnow")) == 2  # IndexNow went first, and was answered


def test_submissions_are_batched_at_10000_urls(engine: Engine, tmp_path: Path) -> None:
    pages = tuple(f"{BASE}/stories/2026-11-14/s-{n}/" for n in range(BATCH + 5))
    listed = tmp_path / "announce.json"
    listed.write_text(json.dumps(Announcement(pages, ()).as_json()))
    result = run(site_settings(tmp_path, engine), "announce", "--urls", str(listed))
    assert result.exit_code == 0, result.stderr
    batches = [json.loads(r.body)["urlList"] for r in engine.at("/indexnow")]
    assert [len(b) for b in batches] == [BATCH, 5] and tuple(batches[0] + batches[1]) == pages


def test_off_until_configured_and_bad_sources_are_warnings(
        engine: Engine, tmp_path: Path) -> None:
    listed = tmp_path / "announce.json"
    listed.write_text(json.dumps(Announcement((f"{BASE}/",), (f"{BASE}/feed.xml",)).as_json()))
    off = tmp_path / "off" / "desk.toml"
    off.parent.mkdir()
    off.write_text(f'base_url = "{BASE}"\n')
    result = run(off, "announce", "--urls", str(listed))
    assert result.exit_code == 0 and "announcing is off" in result.stderr
    settings = site_settings(tmp_path / "on", engine, endpoint=False)
    result = run(settings, "announce", "--urls", str(listed))
    assert result.exit_code == 0 and len(engine.at("/hub")) == 1 and not engine.at(
        "/indexnow")  # WebSub alone: IndexNow needs its endpoint too
    for args, message in ((["--urls", str(tmp_path / "missing.json")], "No such file"),
                          (["--deploy-report", str(listed)], "not a report"),
                          (["--site", str(tmp_path), "--since", str(tmp_path / "gone")],
                           "no site from before the build")):
        result = run(settings, "announce", *args, env={"GITHUB_ACTIONS": "true"})
        assert result.exit_code == 0 and message in result.stderr, result.stderr
        assert result.stdout.startswith("::warning title=desk announce::nothing announced")
    assert run(settings, "announce").exit_code == 2
    assert run(settings, "announce", "--site", str(tmp_path)).exit_code == 2



@pytest.mark.parametrize("path", [REPO / ".github/workflows/publish.yml",
                                  REPO / "desk/starter/publish.yml"], ids=["desk", "starter"])
def test_pages_workflow_lists_the_changes_and_announces_them_after_the_deploy(
        path: Path, engine: Engine, tmp_path: Path) -> None:
    jobs = workflow(path)["jobs"]
    named = {s.get("name"): s for job in jobs.values() for s in job["steps"]}
    keep, build_step = named["Keep the last site to compare with"], named["Build"]
    listing, send = named["List what the build changed"], named["Announce what the publish changed"]
    assert jobs["build"]["outputs"]["announce"] == "${{ steps.changed.outputs.announce }}"
    deploy_steps = jobs["deploy"]["steps"]
    assert deploy_steps.index(send) > [s.get("uses", "").split("@")[0]
                                       for s in deploy_steps].index("actions/deploy-pages")
    assert send["continue-on-error"] is True and send["if"] == (
        "needs.build.outputs.announce == 'true'")

    assert CliRunner().invoke(main, ["init", str(tmp_path / "site"), "--base-url",
                                     BASE]).exit_code == 0
    site = tmp_path / "site"
    settings = (site / "desk.toml").read_text(encoding="utf-8")
    head, _, rest = settings.partition("\n[")
    (site / "desk.toml").write_text(
        f'{head}\nindexnow_key = "{KEY}"\nwebsub_hub = "{engine.url}/hub"\n\n[{rest}'
        f'\n[announce]\nindexnow_endpoint = "{engine.url}/indexnow"\n', encoding="utf-8")
    output = tmp_path / "output"
    env = {"BASE_URL": BASE, "BUILD_NOW": NOW, "GITHUB_OUTPUT": str(output)}

    def publish() -> str:
        output.unlink(missing_ok=True)
        for step in (keep, build_step, listing):
            result = run_step(step, site, **env)
            assert result.returncode == 0, result.stderr
        return output.read_text()

    # A first build has no site before it: nothing is listed, the deploy job skips it.
    assert publish().endswith("announce=false\n") and not (site / "announce.json").exists()
    write_story(site / "content", make_story(41))
    assert publish().endswith("announce=true\n")
    listed = json.loads((site / "announce.json").read_text())
    assert f"{BASE}/stories/2026-11-14/story-number-41/" in listed["pages"]
    assert f"{BASE}/feed.xml" in listed["feeds"]
    assert f"{BASE}/stories/2026-11-14/inference-throughput-race-kimi-deepseek/" not in (
        listed["pages"])  # unchanged
    result = run_step(send, site)
    assert result.returncode == 0, result.stderr
    (submitted,) = engine.at("/indexnow")
    assert json.loads(submitted.body)["urlList"] == listed["pages"] + listed["feeds"]
    assert len(engine.at("/hub")) == len(listed["feeds"])


def test_s3_workflow_announces_after_a_successful_deploy() -> None:
    steps = workflow("publish-s3.yml")["jobs"]["publish"]["steps"]
    names = [s.get("name") for s in steps]
    send = steps[names.index("Announce what the deploy changed")]
    assert names.index("Deploy") < names.index("Announce what the deploy changed")
    assert "if" not in send  # only after the steps before it succeeded
    assert send["continue-on-error"] is True
    assert send["run"].strip() == "desk announce --deploy-report deploy-report.json"
    deploy_step = steps[names.index("Deploy")]
    assert "--report deploy-report.json" in deploy_step["run"]


def test_only_this_site_s_urls_are_sent_and_the_others_named(engine: Engine,
                                                             tmp_path: Path) -> None:
    ours = (f"{BASE}/", f"{BASE}/stories/2026-11-14/a/")
    others = ("https://other.example/stories/x/", "not a url", "javascript:alert(1)",
              f"{BASE}.evil.example/", "http://news.example.org/")
    listed = tmp_path / "announce.json"
    listed.write_text(json.dumps(Announcement(
        ours + others[:3], (f"{BASE}/feed.xml", "https://other.example/feed.xml",
                            *others[3:])).as_json()))
    result = run(site_settings(tmp_path / "site", engine), "announce", "--urls", str(listed),
                 env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 0, result.stderr
    (submitted,) = engine.at("/indexnow")
    assert json.loads(submitted.body)["urlList"] == [*ours, f"{BASE}/feed.xml"]
    assert [parse_qs(r.body.decode())["hub.url"] for r in engine.at("/hub")] == [
        [f"{BASE}/feed.xml"]]
    warned = [line for line in result.stderr.splitlines() if "left out" in line]
    assert len(warned) == 1 and f"6 URL(s) not of the site at {BASE}/" in warned[0]
    assert "'https://other.example/stories/x/', 'not a url', 'javascript:alert(1)' and " \
        "3 more" in warned[0]
    assert result.stdout.count("::warning title=desk announce::6 URL(s)") == 1


def test_a_site_built_for_another_url_is_announced_at_that_url(engine: Engine,
                                                               tmp_path: Path) -> None:
    """The Pages workflow's way with a --base-url of its own: the built site's canonical
    URLs and key location are announced, and the difference is said once."""
    settings = site_settings(tmp_path / "site", engine)
    content = tmp_path / "site" / "content"
    make_corpus(content, 2)
    built = "https://someone.github.io/news"
    public = build(settings, "--base-url", built)
    snapshot = tmp_path / "before"
    shutil.copytree(public, snapshot, copy_function=os.link)
    write_story(content, make_story(7))
    build(settings, "--base-url", built)
    listed = tmp_path / "announce.json"
    result = run(settings, "announce", "--site", str(public), "--since", str(snapshot),
                 "--list", str(listed))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count(f"the site was built for {built}/") == 1, result.stderr
    (submitted,) = engine.at("/indexnow")
    body = json.loads(submitted.body)
    assert body["host"] == "someone.github.io"
    assert body["keyLocation"] == f"{built}/{KEY}.txt"
    assert f"{built}/stories/2026-11-14/story-number-7/" in body["urlList"]
    assert all(url.startswith(f"{built}/") for url in body["urlList"]), body["urlList"]
    assert {parse_qs(r.body.decode())["hub.url"][0] for r in engine.at("/hub")} >= {
        f"{built}/feed.xml"}
    # The list a later job sends names its site: the same URLs, host and key location.
    assert json.loads(listed.read_text())["site"] == built
    result = run(settings, "announce", "--urls", str(listed))
    assert result.exit_code == 0 and "left out" not in result.stderr, result.stderr
    again = json.loads(engine.at("/indexnow")[1].body)
    assert again == body


def test_a_malformed_list_is_a_warning_naming_the_file(engine: Engine, tmp_path: Path) -> None:
    listed = tmp_path / "announce.json"
    listed.write_text("")
    result = run(site_settings(tmp_path / "site", engine), "announce", "--urls", str(listed))
    assert result.exit_code == 0 and not engine.requests
    assert f"nothing announced: {listed}: Expecting value: line 1 column 1" in result.stderr

