"""Builds on every platform: forked workers only where forking is safe, the same site
either way; --jobs that never fails."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import make_corpus

from desk.build.heap import large_blocks_returned
from desk.build.parallel import MAX_JOBS, default_jobs, fork_safe, map_forked
from desk.build.pipeline import PARALLEL_MIN_STORIES

# Every os.fork() of this process, counted as it happens (multiprocessing's fork context
# calls it; subprocesses do not).
FORKS: list[int] = []
os.register_at_fork(before=lambda: FORKS.append(os.getpid()))


def test_forking_is_only_used_on_linux() -> None:
    assert fork_safe("linux")
    assert not fork_safe("darwin")
    assert not fork_safe("win32")
    assert not fork_safe("cygwin")
    assert fork_safe() is sys.platform.startswith("linux")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough stories that a build with two or more jobs forks render workers."""
    content = tmp_path_factory.mktemp("corpus") / "content"
    make_corpus(content, 2 * PARALLEL_MIN_STORIES + 20)
    return content


def build_args(content: Path, out: Path, *extra: str) -> list[str]:
    return ["build", "--content", str(content), "--out", str(out), "--now", NOW, "--jobs", "4",
            "--no-cache", "--no-search", *extra]


def test_one_process_build_equals_forked_build_byte_for_byte(
        desk, corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forked = tmp_path / "linux"
    before = len(FORKS)
    result = desk(*build_args(corpus, forked))
    assert result.exit_code == 0, result.stderr
    assert len(FORKS) > before  # render workers really were forked
    reference = tree(forked)
    assert len(reference) > 3 * 2 * PARALLEL_MIN_STORIES

    for platform in ("darwin", "win32"):
        monkeypatch.setattr(sys, "platform", platform)
        before = len(FORKS)
        result = desk(*build_args(corpus, tmp_path / platform, "-v"))
        monkeypatch.undo()
        assert result.exit_code == 0, result.stderr
        assert len(FORKS) == before, platform  # not one fork
        assert f"one process (forking is not safe on {platform})" in result.stderr
        assert tree(tmp_path / platform) == reference, platform


def test_map_forked_runs_in_this_process_where_forking_is_unsafe(
        monkeypatch: pytest.MonkeyPatch) -> None:
    items = list(range(40))
    before = len(FORKS)
    assert map_forked(str, items, 4) == [str(i) for i in items]
    assert len(FORKS) > before
    monkeypatch.setattr(sys, "platform", "win32")
    before = len(FORKS)
    assert map_forked(str, items, 4) == [str(i) for i in items]
    assert len(FORKS) == before


def test_jobs_default_to_the_cores_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    assert 1 <= default_jobs() <= MAX_JOBS
    # A 96-core machine: the default is capped, never an error.
    monkeypatch.setattr(os, "process_cpu_count", lambda: 96, raising=False)
    assert default_jobs() == MAX_JOBS
    monkeypatch.setattr(os, "process_cpu_count", lambda: None, raising=False)
    assert default_jobs() == 1


@pytest.mark.parametrize("jobs", ["0", "1", "500"])
def test_any_jobs_value_builds(desk, content: Path, tmp_path: Path, jobs: str) -> None:
    from storygen import make_story, write_story

    write_story(content, make_story(1))
    result = desk("build", "--content", str(content), "--out", str(tmp_path / "out"), "--now",
                  NOW, "--no-search", "--jobs", jobs)
    assert result.exit_code == 0, result.stderr


def test_large_freed_blocks_go_back_to_the_system_where_glibc_allows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # glibc accepts the fixed threshold (mallopt returns 1); elsewhere desk leaves it be.
    assert large_blocks_returned() is sys.platform.startswith("linux")
    monkeypatch.setattr(sys, "platform", "win32")
    assert large_blocks_returned() is False
