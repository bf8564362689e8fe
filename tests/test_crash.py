"""A build killed with SIGKILL at any point leaves --out exactly as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import REPO, make_corpus, make_story, write_story


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
