"""Any sequence of changes, built incrementally, equals a build from nothing, byte for byte.

A hypothesis state machine edits, adds and removes stories, edits a related story's
headline, a template, a static file and the config, moves the clock past held stories
and changes desk's code fingerprint. After each step it builds three ways: as `desk
build` does (saved cache, recycled spare), as `desk serve` does (in-process cache, in
place after content changes), and from nothing; all three must be identical.
`make fuzz` (DESK_FUZZ_EXAMPLES) runs it longer.
"""

from __future__ import annotations

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
from storygen import REPO, make_story, write_story

from desk import keys
from desk.build import build
from desk.cache import BuildCache, Session
from desk.catalog import Clock
from desk.config import Config, load_config
from desk.target import FreshStaging, InPlace, RecycledSpare

FUZZ = int(os.environ.get("DESK_FUZZ_EXAMPLES", "0"))
START = datetime(2026, 11, 10, 6, tzinfo=UTC)
NEWSROOMS = ("artificial-intelligence", "climate")
NUMBERS = st.integers(min_value=0, max_value=11)
WORDS = st.text(alphabet="abcdefgh <&>\"'*[]", min_size=1, max_size=12)


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

    @initialize()
    def stories(self) -> None:
        for n in range(11):
            self.write(n)

    def write(self, n: int, **overrides: object) -> None:
        data = make_story(n, NEWSROOMS[n % 2], story_time(n), **overrides)
        if n == 3:  # a story whose page shows story 5's headline
            data["related"] = [{"url": f"https://hangingcontext.com/stories/"
                                       f"{story_time(5):%Y-%m-%d}/story-number-5/"}]
        for old in self.content.rglob(f"story-number-{n}.json"):
            old.unlink()
        write_story(self.content, data)
        self.content_only = True

    @rule(n=NUMBERS, headline=WORDS)
    def edit_story(self, n: int, headline: str) -> None:
        self.write(n, headline=headline)

    @rule(n=NUMBERS)
    def remove_story(self, n: int) -> None:
        for old in self.content.rglob(f"story-number-{n}.json"):
            old.unlink()
        self.content_only = True

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
        clock = Clock(self.now)
        cached = self.config("public")
        assert build(cached, clock, RecycledSpare(cached.output_dir)).ok
        serve = self.config("serve")
        in_place = self.served and self.content_only
        target = (InPlace(serve.output_dir, self.serve_lock, self.session.present) if in_place
                  else FreshStaging(serve.output_dir))
        assert build(serve, clock, target, self.serve_cache).ok
        self.served, self.content_only = True, False
        if not in_place:
            self.session.present = set()  # a new folder: listed again by the next in-place build
        reference = self.config("reference")
        assert build(reference, clock, FreshStaging(reference.output_dir), BuildCache()).ok
        expected = tree(reference.output_dir)
        assert tree(cached.output_dir) == expected
        assert tree(serve.output_dir) == expected


IncrementalBuilds.TestCase.settings = settings(
    max_examples=FUZZ or 4, stateful_step_count=10 if not FUZZ else 30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestIncrementalBuilds = IncrementalBuilds.TestCase
