"""Any sequence of changes, built incrementally, equals a build from nothing, byte for byte.

A hypothesis state machine edits, adds and removes stories, edits a related story's
headline, a template, a static file and the config, moves the clock past held stories
and changes desk's code fingerprint; it adds, replaces and removes a story's picture (a
file of content/media/, or the bytes of that file alone); it adds drafts and promotes them, moves stories
(a new slug, another day) and withdraws stories or takes a withdrawal back. Its preview
(desk serve's DevServer, one preview folder for the whole run, each start on a port of
its own) is stopped and started again on the index the last one kept, killed, given
another site's index or a corrupt one, and saved to while it starts. After each step it
builds as `desk build` does (saved cache, recycled spare) and the preview prepares as
desk serve does after a save (the changed files named as a watcher names them; every
file looked at after other changes), or starts. Each must equal a build from nothing,
with no cache: for `desk build`, without drafts and from the URL history its own last
site carries; for the preview, every file of its site fetched over HTTP (enumerated from
its units), with drafts, its base URL and the history desk build gives. A fixed walk
takes every path of the preview in each `make test` too; `make fuzz`
(DESK_MACHINE_EXAMPLES) runs the machine longer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import tree
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from picturegen import REMOTE, photo
from previews import built_site, served_site
from storygen import REPO, make_story, write_draft, write_story, write_withdrawal

from desk.build import keys
from desk.build.cache import BuildCache, remembered_history
from desk.build.pipeline import BuildReport, build
from desk.build.target import FreshStaging, RecycledSpare
from desk.config import Config, load_config
from desk.content.catalog import Clock
from desk.serve.folder import PREVIEW
from desk.serve.server import DevServer

pytestmark = pytest.mark.slow
FUZZ = int(os.environ.get("DESK_MACHINE_EXAMPLES", "0"))
START = datetime(2026, 11, 10, 6, tzinfo=UTC)
NEWSROOMS = ("artificial-intelligence", "climate")
NUMBERS = st.integers(min_value=0, max_value=11)
DRAFTS = st.integers(min_value=12, max_value=13)  # stories that start as drafts
# Never only spaces: a blank headline or reason is refused (rightly), not a build to compare.
WORDS = st.text(alphabet="abcdefgh <&>\"'*[]", min_size=1, max_size=12).filter(str.strip)
BEATS = st.sampled_from(["", "models", "chips", "policy"])
PAGES = st.sampled_from(["about.md", "policies/corrections.md", "contact.md"])
POLICY = st.sampled_from(["", "masthead", "correctionsPolicy", "ethicsPolicy"])


def story_time(n: int) -> datetime:
    """Story n's publication time: every 50 minutes; numbers 9 and up are held at first."""
    return START + timedelta(minutes=50 * n) + (timedelta(days=1) if n >= 9 else timedelta())


# The content folder's files and folders, each with its stat (None for a folder: a watcher
# names a folder when it appears or goes, not when its files change).
Snapshot = dict[str, tuple[int, int, int] | None]


def snapshot(content: Path) -> Snapshot:
    """What a save changes, as a watcher sees it: each file's stat, each folder."""
    found: Snapshot = {}
    for path in content.rglob("*"):
        stat = path.stat()
        found[str(path)] = (None if path.is_dir() else
                            (stat.st_mtime_ns, stat.st_size, stat.st_ino))
    return found


def changed_paths(before: Snapshot, after: Snapshot) -> list[str]:
    """The paths a watcher names between two snapshots: added, removed or changed."""
    return sorted(p for p in {*before, *after} if before.get(p, 0) != after.get(p, 0))


class IncrementalBuilds(RuleBasedStateMachine):
    """Changes to a small site, each followed by builds that must agree."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="desk-machine-"))
        self.content = self.root / "content"
        self.templates = self.root / "templates"
        self.static = self.root / "static"
        shutil.copytree(REPO / "templates", self.templates)
        shutil.copytree(REPO / "static", self.static)
        self.settings: dict[str, object] = {
            "search": False, "content_dir": self.content, "templates_dir": self.templates,
            "static_dir": self.static, "cache_dir": self.root / "cache", "page_size": 3,
            "feed_size": 4, "sitemap_max_urls": 8}  # a sitemap of parts, as at 100,000
        self.now = START + timedelta(hours=8)
        self.preview: DevServer | None = None
        self.stopped_for = 0  # steps the preview stays stopped for
        self.whole = False  # a change beyond the content since the preview last built
        self.seen: Snapshot = {}  # the content as the preview last built it
        self.start_save: tuple[int, str] | None = None  # a save while the preview starts
        self.lines: list[str] = []  # what the previews printed
        self.starts: list[bool] = []  # whether each start read no story file
        self.code_changes = 0
        self.original_fingerprint = keys.code_fingerprint
        self.known: set[str] = set()  # story ids in the URL history (ever published)
        self.pictured: dict[int, list[dict[str, object]]] = {}  # the images of story n

    @initialize()
    def stories(self) -> None:
        for n in range(11):
            self.write(n)

    def write(self, n: int, draft: bool = False, days: int = 0, **overrides: object) -> None:
        when = story_time(n) - timedelta(days=days)
        overrides = {"beat": ("models", "chips", "policy")[n % 3],
                     "writer": {"agent": ("writer-a", "writer-b")[n % 2 if n < 6 else 0],
                                "run_id": f"run-{n}"}, **overrides}
        if n in self.pictured and "images" not in overrides:
            overrides["images"] = self.pictured[n]
        data = make_story(n, NEWSROOMS[n % 2], when, **overrides)
        if n == 3:  # a story whose page shows story 5's headline (at its first URL)
            data["related"] = [{"url": f"https://hangingcontext.com/stories/"
                                       f"{story_time(5):%Y-%m-%d}/story-number-5/"}]
        for old in self.content.rglob(f"story-number-{n}.json"):
            old.unlink()
        if draft:
            write_draft(self.content, data, f"story-number-{n}.json")
        else:
            write_story(self.content, data, f"story-number-{n}.json")

    @rule(n=NUMBERS, headline=WORDS)
    def edit_story(self, n: int, headline: str) -> None:
        self.write(n, headline=headline)

    @rule(n=NUMBERS)
    def remove_story(self, n: int) -> None:
        for old in self.content.rglob(f"story-number-{n}.json"):
            old.unlink()
        if str(10_000 + n) not in self.known:  # else withdrawing it would be an error
            (self.content / "withdrawn" / f"w{n}.json").unlink(missing_ok=True)

    @rule(n=NUMBERS, version=st.integers(min_value=1, max_value=2),
          days=st.integers(min_value=0, max_value=1))
    def move_story(self, n: int, version: int, days: int) -> None:
        self.write(n, days=days, slug=f"story-number-{n}-v{version}")

    @rule(n=NUMBERS, beat=BEATS)
    def change_beat(self, n: int, beat: str) -> None:
        self.write(n, beat=beat)

    @rule(n=NUMBERS, texts=st.lists(WORDS, min_size=1, max_size=2))
    def add_correction(self, n: int, texts: list[str]) -> None:
        at = story_time(n) + timedelta(hours=2)
        self.write(n, corrections=[{"at": f"{at + timedelta(minutes=i):%Y-%m-%dT%H:%M:%SZ}",
                                    "text": text} for i, text in enumerate(texts)])

    @rule(name=PAGES, title=WORDS, body=WORDS, nav=st.none() | st.integers(0, 3),
          policy=POLICY)
    def write_page(self, name: str, title: str, body: str, nav: int | None,
                   policy: str) -> None:
        path = self.content / "pages" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        others = [p for p in (self.content / "pages").rglob("*.md") if p != path]
        if policy and any(f"policy: {policy}\n" in p.read_text() for p in others):
            policy = ""  # a second page of one policy is an error, not a change
        lines = [f"title: {json.dumps(title)}"]
        lines += [f"nav: {nav}"] if nav is not None else []
        lines += [f"policy: {policy}"] if policy else []
        path.write_text("---\n" + "\n".join(lines) + f"\n---\n{body}\n", encoding="utf-8")

    @rule(name=PAGES)
    def remove_page(self, name: str) -> None:
        (self.content / "pages" / name).unlink(missing_ok=True)

    @rule(n=DRAFTS, headline=WORDS)
    def add_draft(self, n: int, headline: str) -> None:
        self.write(n, draft=True, headline=headline)

    @rule(n=DRAFTS)
    def promote_draft(self, n: int) -> None:
        for draft in (self.content / "drafts").rglob(f"story-number-{n}.json"):
            stories = self.content / "stories" / "promoted"
            stories.mkdir(parents=True, exist_ok=True)
            draft.rename(stories / draft.name)

    @rule(n=st.integers(min_value=0, max_value=13), reason=WORDS)
    def withdraw(self, n: int, reason: str) -> None:
        exists = any(self.content.rglob(f"story-number-{n}.json"))
        if exists or str(10_000 + n) in self.known:
            write_withdrawal(self.content, str(10_000 + n), reason=reason, name=f"w{n}.json")

    @rule(n=st.integers(min_value=0, max_value=13))
    def take_back_withdrawal(self, n: int) -> None:
        (self.content / "withdrawn" / f"w{n}.json").unlink(missing_ok=True)

    @rule(n=NUMBERS, shade=st.integers(min_value=0, max_value=3), remote=st.booleans())
    def add_image(self, n: int, shade: int, remote: bool) -> None:
        local = f"media/p{n}.jpg"
        photo(self.content / local, (640 + 40 * shade, 400), shade=shade)
        self.pictured[n] = [{"url": local, "alt": f"Picture {n}", "credit": "Agency"},
                            *([REMOTE] if remote else [])]
        self.write(n)

    @rule(n=NUMBERS, shade=st.integers(min_value=4, max_value=6))
    def replace_image(self, n: int, shade: int) -> None:
        if n in self.pictured:  # the file's bytes only: the story's own file is the same
            photo(self.content / f"media/p{n}.jpg", (600, 420 + shade), shade=shade)

    @rule(n=NUMBERS, delete=st.booleans())
    def remove_image(self, n: int, delete: bool) -> None:
        if self.pictured.pop(n, None) is not None:
            self.write(n, images=[])
            if delete:
                (self.content / f"media/p{n}.jpg").unlink()

    @rule(headline=WORDS)
    def edit_related_headline(self, headline: str) -> None:
        self.write(5, headline=headline)

    @rule(name=st.sampled_from(["story.html", "edition.html", "newsroom.html",
                                "feed_content.html", "front.html", "story.md.jinja"]),
          word=WORDS)
    def edit_template(self, name: str, word: str) -> None:
        page = self.templates / name
        page.write_text(page.read_text(encoding="utf-8") + f"{{# {word} #}}x\n",
                        encoding="utf-8")
        self.whole = True

    @rule(word=WORDS)
    def edit_static(self, word: str) -> None:
        css = self.static / "site.css"
        css.write_text(css.read_text(encoding="utf-8") + f"/* {word} */\n", encoding="utf-8")
        self.whole = True

    @rule(title=WORDS, page_size=st.integers(min_value=1, max_value=4))
    def edit_config(self, title: str, page_size: int) -> None:
        self.settings.update(title=title, page_size=page_size)
        self.whole = True

    @rule(hours=st.integers(min_value=1, max_value=30))
    def move_clock(self, hours: int) -> None:
        self.now += timedelta(hours=hours)
        if self.preview is not None:  # as desk serve's clock, the real one, moves on
            self.preview._now = self.now

    @rule(salt=WORDS)
    def change_code(self, salt: str) -> None:
        original = self.original_fingerprint
        changed = lambda package_dir=None: original(package_dir) + salt  # noqa: E731
        keys.code_fingerprint = changed  # type: ignore[assignment]
        self.whole = True

    @rule(stay=st.integers(min_value=0, max_value=2),
          change=st.sampled_from(["", "story", "template", "clock", "code", "config"]))
    def restart_preview(self, stay: int, change: str) -> None:
        """Stop the preview cleanly; it starts again after `stay` more steps (a
        `change` made first, while no preview runs)."""
        self.stop_preview(clean=True)
        self.stopped_for = stay
        if change == "story":
            self.write(4, headline="Edited while no preview ran")
        elif change == "template":
            self.edit_template("story.html", "while no preview ran")
        elif change == "clock":
            self.move_clock(1)
        elif change == "code":
            self.code_changes += 1
            self.change_code(f"while no preview ran {self.code_changes}")
        elif change == "config":
            self.edit_config("While no preview ran", int(str(self.settings["page_size"])) % 4 + 1)

    @rule()
    def kill_preview(self) -> None:
        """Drop the preview as a killed process leaves it."""
        self.stop_preview(clean=False)

    @rule(part=st.sampled_from(["other", "corrupt"]), clean=st.booleans())
    def swap_preview_cache(self, part: str, clean: bool) -> None:
        """The preview folder's index another site's, or garbage, before the preview
        starts again."""
        self.stop_preview(clean)
        folder = self.root / "cache" / PREVIEW
        for index in folder.glob("*.sqlite"):
            if part == "corrupt":
                index.write_bytes(b"not an index at all" * 100)
            else:
                shutil.copyfile(next(self.other_preview().glob("*.sqlite")), index)

    @rule(n=NUMBERS, headline=WORDS)
    def save_during_start(self, n: int, headline: str) -> None:
        """Stop the preview cleanly; as the next one starts, story n is saved."""
        self.stop_preview(clean=True)
        self.stopped_for = 0
        self.start_save = (n, headline)

    def stop_preview(self, clean: bool) -> None:
        preview, self.preview = self.preview, None
        if preview is None:
            return
        if clean:
            preview.stop()
        else:  # what a killed process leaves: its port is let go
            preview.httpd.server_close()
            preview._folder.close()

    def other_preview(self) -> Path:
        """The preview folder of another site, prepared once: its stories have this
        site's ids at other URLs."""
        other = self.root / "other"
        folder = other / "cache" / PREVIEW
        if folder.is_dir():
            return folder
        for n in range(4):
            write_story(other / "content", make_story(
                n, NEWSROOMS[n % 2], story_time(n) - timedelta(days=3), slug=f"another-{n}",
                headline=f"Another site's story {n}"))

        def load(base_url: str) -> Config:
            return load_config(REPO / "pyproject.toml", {
                "search": False, "content_dir": other / "content",
                "cache_dir": other / "cache", "output_dir": other / "public",
                "base_url": base_url})

        dev = DevServer(load, ("127.0.0.1", 0), self.now, False, self.lines.append)
        try:
            self.ok(dev.prepare("start"))
        finally:
            dev.stop()
        return folder

    def config(self, out: str, base_url: str | None = None) -> Config:
        return load_config(REPO / "pyproject.toml", {
            **self.settings, "output_dir": self.root / out,
            **({"base_url": base_url} if base_url else {})})

    def load(self, base_url: str) -> Config:
        """The preview's settings: desk build's, with its own base URL."""
        return self.config("public", base_url)

    def teardown(self) -> None:
        self.stop_preview(clean=True)
        keys.code_fingerprint = self.original_fingerprint  # type: ignore[assignment]
        shutil.rmtree(self.root, ignore_errors=True)

    def ok(self, report: BuildReport | None) -> bool:
        assert report is not None and report.ok, (report and report.errors, self.lines[-5:])
        return True

    @invariant()
    def builds_agree(self) -> None:
        clock = Clock(self.now)
        starting = self.preview is None and not self.stopped_for
        if starting:
            self.start_preview()
        cached = self.config("public")
        report = build(cached, clock, RecycledSpare(cached.output_dir))
        assert report.ok, report.findings
        reference = self.config("reference")
        assert build(reference, clock, FreshStaging(reference.output_dir), BuildCache()).ok
        assert tree(cached.output_dir) == tree(reference.output_dir), "reference"
        history = cached.output_dir / ".well-known" / "desk-urls.json"
        self.known = set(json.loads(history.read_text(encoding="utf-8"))["stories"])
        if self.preview is None:
            self.stopped_for -= 1
            return
        if starting:
            self.start()
        else:
            self.save()
        self.same_as_from_nothing(self.preview)

    def start_preview(self) -> None:
        """A new preview, on a port of its own, on the folder the last one left."""
        self.preview = DevServer(self.load, ("127.0.0.1", 0), self.now, False,
                                 self.lines.append)
        self.preview._content = self.preview._content_folder()
        self.preview.start()

    def start(self) -> None:
        """The preview's start, with a save while it starts, if any (taken after the
        start, as the watcher's first batch)."""
        assert self.preview is not None
        preview, saving, self.start_save = self.preview, self.start_save, None
        before = snapshot(self.content)
        if saving is not None:  # saved once the watcher is in place, before the start
            self.write(saving[0], headline=saving[1])
        self.seen = snapshot(self.content)
        self.ok(preview.prepare("start"))
        self.starts.append(not preview.read)
        self.whole = False
        if saving is not None:
            self.ok(preview.prepare("saved during the start", preview.content_changed(
                changed_paths(before, self.seen))))

    def save(self) -> None:
        """The preview's preparation after this step's saves, as desk serve makes it."""
        assert self.preview is not None
        before, self.seen = self.seen, snapshot(self.content)
        self.ok(self.preview.prepare("saved", None if self.whole else
                                     self.preview.content_changed(
                                         changed_paths(before, self.seen))))
        self.whole = False

    def same_as_from_nothing(self, preview: DevServer) -> None:
        """Every file the preview serves equals a build from nothing with its base URL,
        the drafts, and the URL history desk build would start from."""
        reference = self.config("reference-drafts", preview.base_url)
        given, problems = remembered_history(reference.cache_dir, self.root / "public")
        assert not problems
        shutil.rmtree(reference.output_dir, ignore_errors=True)
        assert served_site(preview) == built_site(reference, self.now, reference.output_dir,
                                                  history=given), "preview"


IncrementalBuilds.TestCase.settings = settings(
    max_examples=FUZZ or 4, stateful_step_count=10 if not FUZZ else 30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestIncrementalBuilds = IncrementalBuilds.TestCase


# Every path of the preview, whatever the random runs draw, and whether each start reads
# no story file: started again on the index the last one kept, after a save (True) or
# after a change while none ran (a story's, desk's code's, the settings': False; a
# template's or the clock's: True), killed, saved to as it starts, after a template edit
# and a moved clock, given another site's index or a corrupt one (an index of no use: the
# site's own build's inspections are taken, as at the first start).
PREVIEW_WALK: list[tuple[str, tuple[object, ...], bool | None]] = [
    ("restart_preview", (0, ""), True),
    ("edit_story", (6, "Edited"), None),
    ("restart_preview", (0, ""), True),
    *[("restart_preview", (0, change), change in ("template", "clock"))
      for change in ("story", "template", "clock", "code", "config")],
    ("restart_preview", (1, ""), None),
    ("move_story", (3, 1, 1), False),
    ("kill_preview", (), True),
    ("save_during_start", (2, "Saved during the start"), False),
    ("restart_preview", (1, ""), None),
    ("save_during_start", (4, "Saved during a start"), False),
    ("edit_template", ("story.html", "edited"), None),
    ("move_clock", (20,), None),
    ("swap_preview_cache", ("other", True), False),
    ("swap_preview_cache", ("corrupt", True), True),  # the site's build's index taken
    ("swap_preview_cache", ("other", False), False),
]


def test_every_path_of_the_preview() -> None:
    """The walk above, checked as the random runs are, in every `make test`."""
    machine = IncrementalBuilds()
    try:
        machine.stories()
        machine.builds_agree()
        for name, args, _ in PREVIEW_WALK:
            getattr(machine, name)(*args)
            machine.builds_agree()
    finally:
        machine.teardown()
    assert machine.starts == [True, *(nothing for *_, nothing in PREVIEW_WALK
                                       if nothing is not None)]
