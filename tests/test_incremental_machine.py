"""Any sequence of changes, built incrementally, equals a build from nothing, byte for byte.

A hypothesis state machine edits, adds and removes stories, edits a related story's
headline, a template, a static file and the config, moves the clock past held stories
and changes desk's code fingerprint; it adds, replaces and removes a story's picture (a
file of content/media/, or the bytes of that file alone); it adds drafts and promotes them, moves stories
(a new slug, another day) and withdraws stories or takes a withdrawal back. After each
step it builds four ways: as `desk build` does (saved cache, recycled spare), as `desk
serve` does (in-process cache, in place after content changes, drafts shown), and from
nothing (no cache, the URL history its own last site carries), once without drafts and
once with them; each incremental build must equal its build from nothing.
`make fuzz` (DESK_MACHINE_EXAMPLES) runs it longer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import tree
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from picturegen import REMOTE, photo
from storygen import REPO, make_story, write_draft, write_story, write_withdrawal

from desk.build import keys
from desk.build.cache import BuildCache, Session
from desk.build.pipeline import build
from desk.build.target import FreshStaging, InPlace, RecycledSpare
from desk.config import Config, load_config
from desk.content.catalog import Clock

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


class IncrementalBuilds(RuleBasedStateMachine):
    """Changes to a small site, each followed by three builds that must agree."""

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
            "feed_size": 4}
        self.now = START + timedelta(hours=8)
        self.session = Session()
        self.serve_cache = BuildCache(session=self.session)
        self.serve_lock = threading.Lock()
        self.content_only = False
        self.served = False
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
        self.content_only = True

    @rule(n=NUMBERS, headline=WORDS)
    def edit_story(self, n: int, headline: str) -> None:
        self.write(n, headline=headline)

    @rule(n=NUMBERS)
    def remove_story(self, n: int) -> None:
        for old in self.content.rglob(f"story-number-{n}.json"):
            old.unlink()
        if str(10_000 + n) not in self.known:  # else withdrawing it would be an error
            (self.content / "withdrawn" / f"w{n}.json").unlink(missing_ok=True)
        self.content_only = True

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
        self.content_only = True

    @rule(name=PAGES)
    def remove_page(self, name: str) -> None:
        (self.content / "pages" / name).unlink(missing_ok=True)
        self.content_only = True

    @rule(n=DRAFTS, headline=WORDS)
    def add_draft(self, n: int, headline: str) -> None:
        self.write(n, draft=True, headline=headline)

    @rule(n=DRAFTS)
    def promote_draft(self, n: int) -> None:
        for draft in (self.content / "drafts").rglob(f"story-number-{n}.json"):
            stories = self.content / "stories" / "promoted"
            stories.mkdir(parents=True, exist_ok=True)
            draft.rename(stories / draft.name)
            self.content_only = True

    @rule(n=st.integers(min_value=0, max_value=13), reason=WORDS)
    def withdraw(self, n: int, reason: str) -> None:
        exists = any(self.content.rglob(f"story-number-{n}.json"))
        if exists or str(10_000 + n) in self.known:
            write_withdrawal(self.content, str(10_000 + n), reason=reason, name=f"w{n}.json")
            self.content_only = True

    @rule(n=st.integers(min_value=0, max_value=13))
    def take_back_withdrawal(self, n: int) -> None:
        (self.content / "withdrawn" / f"w{n}.json").unlink(missing_ok=True)
        self.content_only = True

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
            self.content_only = True

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

    @rule(word=WORDS)
    def edit_static(self, word: str) -> None:
        css = self.static / "site.css"
        css.write_text(css.read_text(encoding="utf-8") + f"/* {word} */\n", encoding="utf-8")

    @rule(title=WORDS, page_size=st.integers(min_value=1, max_value=4))
    def edit_config(self, title: str, page_size: int) -> None:
        self.settings.update(title=title, page_size=page_size)

    @rule(hours=st.integers(min_value=1, max_value=30))
    def move_clock(self, hours: int) -> None:
        self.now += timedelta(hours=hours)

    @rule(salt=WORDS)
    def change_code(self, salt: str) -> None:
        original = self.original_fingerprint
        keys.code_fingerprint = lambda package_dir=None: original(package_dir) + salt  # type: ignore[assignment]

    def config(self, out: str) -> Config:
        return load_config(REPO / "pyproject.toml", {**self.settings,
                                                     "output_dir": self.root / out})

    def teardown(self) -> None:
        keys.code_fingerprint = self.original_fingerprint  # type: ignore[assignment]
        shutil.rmtree(self.root, ignore_errors=True)

    @invariant()
    def builds_agree(self) -> None:
        clock, preview = Clock(self.now), Clock(self.now, drafts=True)
        cached = self.config("public")
        report = build(cached, clock, RecycledSpare(cached.output_dir))
        assert report.ok, report.findings
        serve = self.config("serve")
        in_place = self.served and self.content_only
        target = (InPlace(serve.output_dir, self.serve_lock, self.session.present) if in_place
                  else FreshStaging(serve.output_dir))
        assert build(serve, preview, target, self.serve_cache).ok
        self.served, self.content_only = True, False
        if not in_place:
            self.session.present = set()  # a new folder: listed again by the next in-place build
        for name, reference_clock, built in (("reference", clock, cached),
                                             ("reference-drafts", preview, serve)):
            reference = self.config(name)
            assert build(reference, reference_clock, FreshStaging(reference.output_dir),
                         BuildCache()).ok
            assert tree(built.output_dir) == tree(reference.output_dir), name
        history = cached.output_dir / ".well-known" / "desk-urls.json"
        self.known = set(json.loads(history.read_text(encoding="utf-8"))["stories"])


IncrementalBuilds.TestCase.settings = settings(
    max_examples=FUZZ or 4, stateful_step_count=10 if not FUZZ else 30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestIncrementalBuilds = IncrementalBuilds.TestCase
