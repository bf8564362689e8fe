"""One writer per site: builds started together, a build killed holding the lock, a
build that waits, --no-wait, and a checkout moved between two builds. Real processes
throughout (`python -m desk`), as a newsroom runs them."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import REPO, make_corpus, write_story

from desk.build.cache import BuildCache
from desk.build.lock import cache_lock_file, site_lock_file

# Tries of the concurrency test: a few in `make test`, many in `make fuzz`.
TRIES = int(os.environ.get("DESK_LOCK_TRIES", "3"))
BUILDS_AT_ONCE = 3
STORIES = 40
EDITED = 5
BUSY = 4  # desk's exit status for --no-wait when the lock is held

# A process that holds a site's locks as a build does, until its standard input closes.
HOLDER = """
import sys
from pathlib import Path
from desk.build.cache import BuildCache
from desk.build.lock import guarded_by, writing
out, cache = Path(sys.argv[1]), Path(sys.argv[2])
with writing(guarded_by(out, BuildCache.file_for(cache, out)), "build"):
    print("held", flush=True)
    sys.stdin.read()
"""


class Project:
    """A content folder, its output and cache folders, and how desk is run on them."""

    def __init__(self, root: Path, stories: int = STORIES) -> None:
        self.root = root
        self.content = root / "content"
        self.out = root / "public"
        self.cache = root / ".desk-cache"
        self.stories = make_corpus(self.content, stories)

    @classmethod
    def at(cls, root: Path) -> Project:
        """The project already in root (its content as it is)."""
        project = cls.__new__(cls)
        project.root, project.content, project.stories = root, root / "content", []
        project.out, project.cache = root / "public", root / ".desk-cache"
        return project

    def args(self, *extra: str, out: Path | None = None) -> list[str]:
        return [sys.executable, "-m", "desk", "build", "--config", str(REPO / "pyproject.toml"),
                "--content", str(self.content), "--out", str(out or self.out),
                "--cache-dir", str(self.cache), "--now", NOW, *extra]

    def start(self, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.args(*extra), cwd=self.root, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=_env())

    def run(self, *extra: str, out: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.args(*extra, out=out), cwd=self.root, capture_output=True,
                              text=True, env=_env(), timeout=300)

    def from_nothing(self) -> dict[str, bytes]:
        """The site a build from nothing makes of the content as it is now."""
        reference = self.root / "reference"
        shutil.rmtree(reference, ignore_errors=True)
        result = self.run("--no-cache", out=reference)
        assert result.returncode == 0, result.stderr
        return tree(reference)

    def edit(self, round_: int) -> None:
        for n in range(min(EDITED, len(self.stories))):
            story = self.stories[n * len(self.stories) // EDITED]
            write_story(self.content, {**story, "headline": f"Edited {round_}: {story['headline']}"})

    def hold(self) -> subprocess.Popen[str]:
        """A process holding this site's locks (it says so before this returns)."""
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(self.out), str(self.cache)],
                                  cwd=self.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=_env())
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        return holder


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}


def _finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


@pytest.mark.slow
@pytest.mark.parametrize("edits", [False, True], ids=["unchanged", "edited"])
def test_builds_started_together_end_with_the_site_a_build_from_nothing_makes(
        tmp_path: Path, edits: bool) -> None:
    project = Project(tmp_path)
    assert project.run().returncode == 0
    for round_ in range(TRIES):
        if edits:
            project.edit(round_)
        builds = [project.start("--jobs", "1") for _ in range(BUILDS_AT_ONCE)]
        results = [_finish(b) for b in builds]
        assert [code for code, _, _ in results] == [0] * BUILDS_AT_ONCE, results
        expected = project.from_nothing()
        assert len([f for f in expected if f.endswith("/index.json")]) > STORIES
        assert tree(project.out) == expected, f"try {round_ + 1} of {TRIES}"
    # The cache the last of them saved is one the next build uses: nothing is rendered.
    again = project.run("-v")
    assert again.returncode == 0, again.stderr
    assert " 0 unit(s) reused" not in again.stderr and "unit(s) reused" in again.stderr
    assert tree(project.out) == expected


def test_a_build_waits_for_the_holder_says_so_once_and_goes_on_when_it_dies(
        tmp_path: Path) -> None:
    project = Project(tmp_path, stories=5)
    holder = project.hold()
    build = project.start()
    assert build.stderr is not None
    waiting = build.stderr.readline()
    assert waiting.startswith(f"desk build: waiting for the build of PID {holder.pid} on ")
    assert str(project.out) in waiting
    assert build.poll() is None  # still waiting
    holder.kill()  # SIGKILL: the kernel releases its lock
    holder.wait()
    code, out, err = _finish(build)
    assert code == 0, err
    assert "waiting" not in err  # said once, not again
    assert out.startswith("Built 5 stories")
    assert tree(project.out) == project.from_nothing()


def test_no_wait_refuses_at_once_with_its_own_status_and_changes_nothing(
        tmp_path: Path) -> None:
    project = Project(tmp_path, stories=5)
    assert project.run().returncode == 0
    before = tree(project.out)
    project.edit(1)
    holder = project.hold()
    try:
        refused = project.run("--no-wait")
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == BUSY, refused.stderr
    assert f"locked by the build of PID {holder.pid}" in refused.stderr
    assert refused.stdout == ""
    assert tree(project.out) == before
    built = project.run("--no-wait")  # the holder is gone: no stale lock is left
    assert built.returncode == 0, built.stderr


def test_a_build_killed_holding_the_lock_lets_the_next_one_in_at_once(tmp_path: Path) -> None:
    project = Project(tmp_path, stories=300)
    build = project.start("--jobs", "1")
    lock = site_lock_file(project.out)
    deadline = time.monotonic() + 60
    # The holder writes its name into the lock file once it holds the lock.
    while not (lock.is_file() and lock.read_text() == f"build {build.pid}\n"):
        assert build.poll() is None and time.monotonic() < deadline, "never took the lock"
        time.sleep(0.002)
    build.send_signal(signal.SIGKILL)
    build.communicate()
    assert build.returncode == -signal.SIGKILL  # killed while building, not finished
    after = project.run("--no-wait")
    assert after.returncode == 0, after.stderr
    assert tree(project.out) == project.from_nothing()


def test_lock_files_sit_beside_what_they_guard_and_are_never_published(tmp_path: Path) -> None:
    project = Project(tmp_path, stories=3)
    assert project.run().returncode == 0
    state = BuildCache.file_for(project.cache, project.out)
    assert site_lock_file(project.out) == tmp_path / ".public.desk-lock"
    assert cache_lock_file(state).parent == project.cache
    assert site_lock_file(project.out).is_file() and cache_lock_file(state).is_file()
    # Released on exit: nobody is named as holding them.
    assert site_lock_file(project.out).read_text() == ""
    assert not any("lock" in name for name in tree(project.out))


def test_a_moved_checkout_builds_from_its_cache_rendering_nothing(tmp_path: Path) -> None:
    project = Project(tmp_path / "newsroom")
    assert project.run().returncode == 0
    in_place = project.run("-v")  # what a second build keeps where it was built
    assert in_place.returncode == 0, in_place.stderr
    built = tree(project.out)
    kept = _reused(in_place.stderr)
    assert kept > STORIES
    moved = tmp_path / "renamed-clone"
    project.root.rename(moved)
    project = Project.at(moved)
    again = project.run("-v")
    assert again.returncode == 0, again.stderr
    assert _reused(again.stderr) == kept  # every unit kept, as if it had not moved
    assert tree(project.out) == built


def _reused(stderr: str) -> int:
    """The units a build kept, from what -v prints ("…; N unit(s) reused.")."""
    line = next(x for x in stderr.splitlines() if x.endswith(" unit(s) reused."))
    return int(line.rsplit(";", 1)[1].split()[0])
