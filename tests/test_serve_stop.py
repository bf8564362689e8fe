"""How `desk serve` stops: SIGTERM and SIGHUP as cleanly as Ctrl-C, one preview folder
per site holding its index alone whatever happened, an older preview's site deleted by
a process of its own, and a browser tab closed mid-response is no error. Real
processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from conftest import NOW, child_pids
from previews import one_story_preview
from storygen import make_corpus

from desk.cli import stop_on_signal
from desk.serve.folder import PREVIEW, PreviewFolder
from desk.serve.http import PreviewHTTPServer

STOPS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL)


def start_preview(root: Path, temp: Path) -> tuple[subprocess.Popen[str], list[str]]:
    """`desk serve` in root, once it serves; the lines it printed (kept being read)."""
    env = {**os.environ, "TMPDIR": str(temp)}
    process = subprocess.Popen(
        [sys.executable, "-m", "desk", "serve", "--port", "0", "--now", NOW],
        cwd=root, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    lines: list[str] = []
    for line in process.stderr:  # blocks on the server's own output
        lines.append(line)
        if line.startswith("Serving "):
            break
    assert any(line.startswith("start: built ") for line in lines), lines
    stream = process.stderr
    threading.Thread(target=lambda: lines.extend(stream), daemon=True).start()
    return process, lines


@pytest.mark.slow
def test_ten_previews_stopped_every_way_leave_one_preview_folder(tmp_path: Path) -> None:
    root, temp = tmp_path / "site", tmp_path / "tmp"
    temp.mkdir()
    subprocess.run([sys.executable, "-m", "desk", "init", str(root), "--base-url",
                    "https://news.example.org", "-q"], check=True)
    make_corpus(root / "content", 5)
    cache = root / ".desk-cache"
    for n in range(10):
        stop = STOPS[n % len(STOPS)]
        process, lines = start_preview(root, temp)
        process.send_signal(stop)
        try:
            code = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError(f"still running 30 s after {stop!r}: {lines}") from None
        assert code == (-signal.SIGKILL if stop == signal.SIGKILL else 0), lines
        if stop != signal.SIGKILL:
            assert "Stopped." in "".join(lines), (stop, lines)
            assert "Traceback" not in "".join(lines), lines
        assert [p.name for p in cache.iterdir() if p.is_dir()] == [PREVIEW]
        assert list(temp.iterdir()) == []  # nothing in the temporary folder
        # Its index, the templates' compiled code, the lock: no site.
        kept = {p.name for p in (cache / PREVIEW).iterdir()}
        assert {n for n in kept if n.endswith(".sqlite")} and not {"site", "trash"} & kept
        assert kept <= {"templates", ".preview.lock"} | {n for n in kept
                                                          if n.startswith("index-")}, kept


def test_a_stop_signal_whose_interrupt_python_drops_still_stops_the_preview(
        tmp_path: Path) -> None:
    """The handler may run inside a finaliser (the garbage collector runs them in the
    main thread), where Python prints and drops the KeyboardInterrupt it raises: the
    stop must not depend on that exception."""
    dev = one_story_preview(tmp_path, datetime.fromisoformat(NOW))
    serving = threading.Event()
    running = threading.Thread(target=dev.run, args=(1, serving.set), daemon=True)
    running.start()
    try:
        assert serving.wait(timeout=60), "the preview never served"
        with pytest.raises(KeyboardInterrupt):  # here the finaliser would drop it
            stop_on_signal(dev, os.getpid())(signal.SIGTERM, None)
        running.join(timeout=30)
        assert not running.is_alive(), "the preview went on after a dropped interrupt"
    finally:
        dev.stop()


def test_previews_of_a_site_share_its_folder_and_a_temporary_one_goes(
        tmp_path: Path) -> None:
    first, second = PreviewFolder(tmp_path), PreviewFolder(tmp_path)
    unreadable = PreviewFolder(None)  # settings that cannot be read: a folder of its own
    try:
        assert first.path == second.path == tmp_path / PREVIEW
        assert first.index == second.index and "8" not in first.index.name
        assert first.shared and not unreadable.shared
        assert not unreadable.path.is_relative_to(tmp_path)
        with first.writing():
            pass
    finally:
        for folder in (first, second, unreadable):
            folder.close()
    assert not unreadable.path.exists()  # its own folder goes with it
    assert first.path.is_dir()  # the site's stays, for the next preview


def test_an_older_previews_site_is_deleted_by_a_process_of_its_own(tmp_path: Path) -> None:
    """What a preview of an older desk left (a whole site, its cache, its record) is
    deleted away from the preview's interpreter, even once the preview has stopped."""
    left = tmp_path / PREVIEW / "site"
    for n in range(50):
        (left / f"d{n}").mkdir(parents=True)
        (left / f"d{n}" / "index.html").write_text("old")
    (tmp_path / PREVIEW / "cache").mkdir()
    (tmp_path / PREVIEW / "resume.json").write_text("{}")
    (tmp_path / PREVIEW / "index-0123456789ab.sqlite").write_text("kept")
    folder = PreviewFolder(tmp_path)
    folder.close()  # the deletion goes on without the preview
    emptying = folder.emptying
    assert emptying is not None and emptying.pid != os.getpid()
    assert emptying.wait(timeout=60) == 0
    assert {p.name for p in (tmp_path / PREVIEW).iterdir()} == {"index-0123456789ab.sqlite"}


@pytest.mark.parametrize("error", [BrokenPipeError, ConnectionResetError])
def test_a_closed_tab_is_silent_and_other_errors_are_not(
        capsys: pytest.CaptureFixture[str], error: type[Exception]) -> None:
    server = PreviewHTTPServer(("127.0.0.1", 0), _NoHandler)
    try:
        try:
            raise error(32, "the browser went away")
        except ConnectionError:
            server.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real bug")
        except ValueError:
            server.handle_error(None, ("127.0.0.1", 1))
        assert "ValueError: a real bug" in capsys.readouterr().err
    finally:
        server.server_close()


class _NoHandler:  # never called: no request is served
    pass


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_closed_terminal_stops_a_preview_and_its_workers_without_a_traceback(
        tmp_path: Path) -> None:
    root = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "desk", "init", str(root), "--base-url",
                    "https://news.example.org", "-q"], check=True)
    make_corpus(root / "content", 400)  # enough that the build forks workers
    process = subprocess.Popen([sys.executable, "-m", "desk", "serve", "--port", "0",
                                "--now", NOW], cwd=root, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    while not child_pids(process.pid):  # the first build has forked its workers
        assert process.poll() is None and time.monotonic() < deadline, "no workers seen"
        time.sleep(0.005)
    os.killpg(process.pid, signal.SIGHUP)  # what a closed terminal sends: to every process
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "ForkProcess" not in err, err
    assert "Stopped." in err


# A process with desk serve's stop handler in place forks two workers. Each stops itself
# as a closed terminal would stop it; the first is forked as usual, the second with the
# stop signal arriving inside multiprocessing's start: after its finaliser took a weak
# reference to the process object, before the finaliser has its key (where a closed
# terminal's SIGHUP once landed).
FORK_DURING_STOP = """
import itertools, os, signal, sys
import multiprocessing.util as mp_util
from desk.build.parallel import result_of, start_forked
from desk.cli import stop_on_signal

class Server:
    def ask_stop(self):
        print("asked to stop", flush=True)

for stop in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(stop, stop_on_signal(Server(), os.getpid()))
numbers = itertools.count()

class SignalOnFirstKey:
    sent = False
    def __next__(self):
        if not SignalOnFirstKey.sent:
            SignalOnFirstKey.sent = True
            os.kill(os.getpid(), signal.SIGHUP)
        return next(numbers)

def worker():
    os.kill(os.getpid(), signal.SIGHUP)  # a closed terminal signals every process
    return "the worker went on"

print(result_of(start_forked(worker)), flush=True)
mp_util._finalizer_counter = SignalOnFirstKey()
try:
    print(result_of(start_forked(worker)), flush=True)
except KeyboardInterrupt:
    print("stopped", flush=True)
"""


def test_a_stop_signal_while_a_worker_is_forked_stops_without_a_traceback() -> None:
    done = subprocess.run([sys.executable, "-c", FORK_DURING_STOP], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # A worker's stop signal ends it (it does not go on, held back); the parent's is
    # handled once its worker is started.
    assert done.stdout.splitlines() == ["(False, 'a worker stopped unexpectedly')",
                                        "asked to stop", "stopped"], done.stdout
    assert done.stderr == "", done.stderr
