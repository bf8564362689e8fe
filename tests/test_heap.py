"""How a build keeps the cyclic garbage collector off the objects it holds: paused while
it builds, and not run on the way out of the process."""

from __future__ import annotations

import gc
import json
import os
import subprocess
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


# A reference cycle whose collection says so: only a collection can free it.
CYCLE = """
import gc
gc.disable()  # no collection but the interpreter's own on its way out
from desk.build.heap import left_alone_at_exit
class Cycle:
    def __del__(self):
        print("collected")
cycle = Cycle()
cycle.me = cycle
del cycle
if LEAVE:
    left_alone_at_exit()
    left_alone_at_exit()
print("done")
"""


@pytest.mark.parametrize("leave", [False, True])
def test_the_collection_on_the_way_out_leaves_every_object_alone(leave: bool) -> None:
    result = subprocess.run([sys.executable, "-c", CYCLE.replace("LEAVE", str(leave))],
                            capture_output=True, text=True, check=True)
    assert result.stdout.split() == (["done"] if leave else ["done", "collected"])


# A process whose work held an object that says when it is freed.
OUTLIVING = """
from desk.build.heap import Outliving
class Made:
    def __del__(self):
        print("freed")
outliving = Outliving()
assert not outliving.holds
outliving.hold(Made(), [Made() for _ in range(3)])
assert outliving.holds
print("done", end="")  # flushed by end(), not by a line break
outliving.end(7)
print("never")
"""


def test_a_process_ends_without_freeing_what_it_held() -> None:
    result = subprocess.run([sys.executable, "-c", OUTLIVING], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 7
    assert result.stdout == "done"  # its output flushed; nothing freed, nothing after
    # Started with its error stream closed (Python's sys.stderr is None): the same status.
    closed = subprocess.run([sys.executable, "-c", OUTLIVING], stdout=subprocess.PIPE,
                            text=True, timeout=60, preexec_fn=lambda: os.close(2))
    assert (closed.returncode, closed.stdout) == (7, "done")


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
