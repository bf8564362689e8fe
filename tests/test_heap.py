"""How a build keeps the cyclic garbage collector off the objects it holds: paused from
the index's read to the end of the build."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Result
from storygen import make_corpus, make_story, write_story
from test_code_changes import NOW, build_args, run_desk

from desk.build.heap import collector_paused


def test_the_collector_is_paused_within_and_resumes_after() -> None:
    if not gc.isenabled():
        pytest.skip("the collector is off in this process")
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_build_reads_its_index_with_the_collector_paused(
        tmp_path: Path, desk: Callable[..., Result]) -> None:
    # The collector's passes over the objects the read makes, as they pile up, took a
    # third of the read at 100,000 stories (4.1-5.0 s against 2.8-3.0 s).
    if not gc.isenabled():
        pytest.skip("the collector is off in this process")
    content = tmp_path / "content"
    make_corpus(content, 150)  # enough objects read back for the collector to run
    args = ["build", "--content", str(content), "--out", str(tmp_path / "public"),
            "--cache-dir", str(tmp_path / "cache"), "--now", NOW, "--no-search",
            "--jobs", "1"]
    assert desk(*args).exit_code == 0
    during: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "read_state":
            frame = frame.f_back  # type: ignore[assignment]
        if phase == "start" and frame is not None:
            during.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        assert desk(*args).exit_code == 0
    finally:
        gc.callbacks.remove(seen)
    assert during == []


def test_the_desk_program_ends_a_build_with_its_status_and_all_it_printed(tmp_path: Path
                                                                          ) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(1))
    report = tmp_path / "report.json"
    built = run_desk([*build_args(content, tmp_path), "-v", "--report", str(report)], tmp_path)
    assert built.returncode == 0, built.stderr
    # Printed to pipes, so held in buffers until the process flushed them.
    assert built.stdout.startswith("Built 1 story into")
    assert "Timings: state" in built.stderr
    assert json.loads(report.read_text(encoding="utf-8"))["newsrooms"] == {"artificial-intelligence": 1}
    write_story(content, make_story(2)).write_text("{", encoding="utf-8")  # not JSON
    refused = run_desk(build_args(content, tmp_path), tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.rstrip().endswith("was left as it was.")
