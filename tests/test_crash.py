"""A build killed with SIGKILL at any point leaves --out exactly as it was, and an index
the next build uses or rebuilds."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import REPO, make_corpus, make_story, write_story

from desk.build.state import SUFFIX, SavedState, read_state


def staged_files(parent: Path) -> int:
    """Files written so far into staging folders beside the output."""
    return sum(len(files) for entry in parent.iterdir() if entry.name.startswith(".public.desk-")
               for _, _, files in os.walk(entry))


def desk_build(content: Path, out: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "desk", "build", "--config", str(REPO / "pyproject.toml"),
         "--content", str(content), "--out", str(out), "--now", NOW],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_sigkill_at_several_points_never_damages_the_site(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(1000, published_at=datetime(2026, 11, 14, tzinfo=UTC)))
    out = tmp_path / "public"
    first = desk_build(content, out)
    assert first.wait(60) == 0
    make_corpus(content, 400)  # the next build has plenty to write
    before = tree(out)

    killed_mid_build = 0
    for threshold in (0, 1, 100, 500, 1200):
        process = desk_build(content, out)
        deadline = time.monotonic() + 60
        # Wait on the condition "this many files are staged", then kill at once.
        while process.poll() is None and time.monotonic() < deadline:
            if threshold == 0 or staged_files(tmp_path) >= threshold:
                break
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            killed_mid_build += 1
        assert process.returncode in (0, -signal.SIGKILL), process.stderr
        assert tree(out) == before or process.returncode == 0
        if process.returncode == 0:
            break  # too fast for this threshold: the build completed normally
    assert killed_mid_build >= 3

    final = desk_build(content, out)
    assert final.wait(120) == 0, final.stderr.read() if final.stderr else ""
    assert len(list(out.glob("stories/*/*/index.html"))) == 401
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".public.desk-")
                 and p.is_dir() and p.name != ".public.desk-spare"]
    assert leftovers == []


def desk_build_cached(content: Path, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    """`desk build` with its index in `cache`, its stderr kept."""
    return subprocess.Popen(
        [sys.executable, "-m", "desk", "build", "--config", str(REPO / "pyproject.toml"),
         "--content", str(content), "--out", str(out), "--cache-dir", str(cache),
         "--now", NOW], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def killed_when(process: subprocess.Popen[bytes], due: Callable[[], bool]) -> bool:
    """SIGKILL the build as soon as `due()` holds (polled without pause); whether it
    was killed before it ended by itself."""
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if due():
            process.send_signal(signal.SIGKILL)
            break
    process.wait(60)
    assert process.returncode in (0, -signal.SIGKILL), process.stderr
    return process.returncode == -signal.SIGKILL


def from_nothing(content: Path, tmp_path: Path) -> dict[str, bytes]:
    out = tmp_path / "nothing" / "public"
    shutil.rmtree(out.parent, ignore_errors=True)
    reference = desk_build_cached(content, out, tmp_path / "nothing" / "cache")
    assert reference.wait(120) == 0, reference.stderr.read() if reference.stderr else ""
    return tree(out)


@pytest.mark.slow
def test_sigkill_at_random_points_leaves_an_index_the_next_build_uses_or_rebuilds(
        tmp_path: Path) -> None:
    """Builds killed while they write the index (in a transaction, or whole into a new
    file: told by SQLite's journal or the new file appearing) and at random moments of
    a build: after each, the index reads back or is no index at all, and the next build
    makes the site a build from nothing makes, byte for byte."""
    content, out, cache = tmp_path / "content", tmp_path / "public", tmp_path / "cache"
    make_corpus(content, 40)
    first = desk_build_cached(content, out, cache)
    assert first.wait(120) == 0
    started = time.monotonic()
    # The random moments fall within the time a build of one new story takes here, so
    # that most of them come before it ends, on a fast machine as on a busy one.
    write_story(content, make_story(99, published_at=datetime(2026, 11, 14, tzinfo=UTC)))
    assert desk_build_cached(content, out, cache).wait(120) == 0
    took = time.monotonic() - started
    rng = random.Random(64)
    (index,) = cache.glob("*" + SUFFIX)
    journal, whole = index.with_name(index.name + "-journal"), index.with_name(index.name + ".tmp")
    points: list[Callable[[], bool]] = [
        journal.exists,  # a write of what changed, in its transaction
        whole.exists,  # a write of the whole index, into a new file
        *(After(rng.uniform(0.05, 0.9) * took) for _ in range(4))]
    killed = 0
    for n, due in enumerate(points):
        # Something to write: a new story each turn, an edit of another, and for the
        # whole write an index of another version (written anew).
        write_story(content, make_story(100 + n, published_at=datetime(2026, 11, 14,
                                                                        tzinfo=UTC)))
        edited = sorted(content.rglob("*.json"))[n]
        edited.write_text(edited.read_text() + "\n")
        if due is whole.exists:
            with contextlib.closing(sqlite3.connect(index)) as db, db:
                db.execute("UPDATE setting SET value = '0' WHERE name = 'version'")
        killed += killed_when(desk_build_cached(content, out, cache), due)
        # What was left reads back as an index, or as none: never half of one.
        with contextlib.closing(sqlite3.connect(index)) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        left = read_state(index)
        assert left == SavedState() or len(left.inspected) >= 40, n
        after = desk_build_cached(content, out, cache)
        assert after.wait(120) == 0, after.stderr.read() if after.stderr else ""
        assert tree(out) == from_nothing(content, tmp_path), n
    assert killed >= 3, killed
    assert time.monotonic() - started < 600


class After:
    """True once `seconds` have passed since first asked."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.begun = seconds, 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        self.begun = self.begun or now
        return now - self.begun >= self.seconds
