"""Work on every core: forked workers that load files, or render stories or the pages
around them and write them straight into the staging folder.

Workers are forked after the catalog is built, so they inherit everything they need (the
catalog, templates, config) without copying it; only a small record per story comes back.
Forking is used from a process without threads (the command-line build), or from one
whose other threads leave alone what a worker uses while it is forked: `desk serve`,
whose server threads take the gate a worker is forked under (Session.fork_gate) around
making a page on demand and printing an error, so its start renders with every core
while it serves. Only where forking is safe (fork_safe): elsewhere the same build runs
in one process, with the same output.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, TypeVar

from desk.build.writer import FilePool, WriteError
from desk.content.findings import Finding
from desk.content.loader import LoadedStory
from desk.render import Output
from desk.render.story import RenderedStory
from desk.urls import relative_file

RenderUnit = Callable[[LoadedStory, str], tuple[list[Output], RenderedStory]]
Describe = Callable[[Exception], Finding | None]
T = TypeVar("T")
R = TypeVar("R")


class RenderFailed(Exception):
    """Rendering failed in a worker; carries the finding to report."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.format())
        self.finding = finding


# More workers than this cost memory and start-up time without rendering any faster.
MAX_JOBS = 64


def fork_safe(platform: str | None = None) -> bool:
    """Whether workers may be forked on this platform (default: this one): on Linux only.
    Windows cannot fork; on macOS a forked child of a process that has used the system's
    frameworks or threads may crash or hang."""
    platform = sys.platform if platform is None else platform
    return platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def default_jobs() -> int:
    """One worker per core this process may run on, at most MAX_JOBS."""
    process_cpu_count = getattr(os, "process_cpu_count", None)  # Python 3.13+
    cores: int | None
    if process_cpu_count is not None:
        cores = process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):  # the cores this process may use (Linux)
        cores = len(os.sched_getaffinity(0))
    else:
        cores = os.cpu_count()
    return max(1, min(MAX_JOBS, cores or 1))


def map_forked(func: Callable[[T], R], items: Sequence[T], workers: int,
               gate: AbstractContextManager[object] | None = None) -> list[R]:
    """func over items, results in order: the first share here, the others in forked
    processes (each forked holding `gate`: see the module's note on threads). Used to
    load many files at once."""
    workers = max(1, min(workers, len(items)))
    if workers == 1 or not fork_safe():
        return [func(item) for item in items]
    size = -(-len(items) // workers)
    chunks = [items[i: i + size] for i in range(0, len(items), size)]
    forked = [_fork(_map_chunk, (func, chunk), gate) for chunk in chunks[1:]]
    try:
        results = [func(item) for item in chunks[0]]
        for worker in forked:
            kind, payload = _outcome(worker)
            if kind != "ok":
                raise RuntimeError(payload)
            results.extend(payload)
    finally:
        stop_workers(forked)
    return results


def _map_chunk(func: Callable[[T], R], chunk: Sequence[T], send: Connection) -> None:
    _call(lambda: [func(item) for item in chunk], send)


@dataclass(frozen=True)
class Forked:
    """func() running in a forked process (start_forked). Its result waits in an unnamed
    file rather than in the process, which ends as soon as it has made it: at 100,000
    stories a survey's process, waiting to be read, held 88 MB at the moment the build's
    memory peaked."""

    worker: Worker
    spill: IO[bytes]


def start_forked(func: Callable[[], object]) -> Forked:
    """func() started in a forked process (only from a process without threads, where
    fork_safe): its result comes back by result_of, or stop_forked stops it."""
    spill = tempfile.TemporaryFile()  # noqa: SIM115 - closed by result_of or stop_forked
    return Forked(_fork(_call, (partial(_spill, func, spill),)), spill)


def result_of(forked: Forked) -> tuple[bool, Any]:
    """Wait for a function started by start_forked: (True, its result), or (False, what
    went wrong)."""
    try:
        kind, payload = _outcome(forked.worker)
        if kind == "ok":
            forked.spill.seek(0)  # the worker's writes moved the offset both share
            payload = pickle.load(forked.spill)  # noqa: S301 - written by our own fork
    finally:
        stop_forked(forked)
    return kind == "ok", payload


def stop_forked(forked: Forked) -> None:
    """Stop a function started by start_forked, if it still runs, and drop its result."""
    stop_workers([forked.worker])
    forked.spill.close()


def _spill(func: Callable[[], object], spill: IO[bytes]) -> None:
    pickle.dump(func(), spill, protocol=pickle.HIGHEST_PROTOCOL)
    spill.flush()  # a forked process ends without flushing its files


def _call(func: Callable[[], object], send: Connection) -> None:
    _die_with_parent()
    _quiet_on_stop()
    try:
        send.send(("ok", func()))
    except Exception as exc:  # noqa: BLE001 - the parent raises or reports it
        send.send(("error", f"worker: {exc!r}"))
    finally:
        send.close()


def start_workers(
    chunks: Sequence[Sequence[tuple[LoadedStory, str]]],
    render: RenderUnit,
    describe: Describe,
    root: Path,
    replace: bool = False,
    gate: AbstractContextManager[object] | None = None,
) -> list[Worker]:
    """Fork one worker per chunk; each renders its stories and writes them below root
    (`replace`: unlinking each file first, where one may be a link to the live site).
    `describe` turns a failure into the finding to report (None: an unexpected error);
    `gate` is held while each is forked."""
    return [_fork(_work, (partial(_write_stories, chunk, render), describe, root, replace),
                  gate) for chunk in chunks]


def start_unit_workers(
    chunks: Sequence[Sequence[Callable[[], Iterable[Output]]]],
    describe: Describe,
    root: Path,
    replace: bool = False,
    gate: AbstractContextManager[object] | None = None,
) -> list[Worker]:
    """Fork one worker per chunk of units' renderers; each writes its units' files below
    root, and its outcome is each unit's files and their size in bytes, in order (`gate`
    held while each is forked)."""
    return [_fork(_work, (partial(_write_units, chunk), describe, root, replace), gate)
            for chunk in chunks]


Worker = tuple[multiprocessing.process.BaseProcess, Connection]


def _fork(target: Callable[..., None], args: tuple[Any, ...],
          gate: AbstractContextManager[object] | None = None) -> Worker:
    """Start target(*args, send) in a forked process, holding `gate` meanwhile; its
    outcome comes through the pipe."""
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=target, args=(*args, send), daemon=True)
    with gate or nullcontext(), _stop_signals_held():
        process.start()
    send.close()
    return process, receive


# The signals that stop desk serve: Ctrl-C, a process manager's stop, a closed terminal
# (SIGHUP: where the system has it). Its handler raises KeyboardInterrupt (desk.cli).
STOP_SIGNALS = frozenset(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                         if hasattr(signal, name))


@contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Stop signals held back while a worker is forked: an interrupt raised inside
    multiprocessing's start leaves it half set up (a finaliser without its key, which
    prints a traceback when the process object goes). A held signal is handled on the
    way out, the worker started and known; the worker lets its own through once it has
    its handlers (_let_stop_signals_in)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _let_stop_signals_in() -> None:
    """A forked worker's stop signals, held while it was forked, let in again."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _outcome(worker: Worker) -> tuple[str, Any]:
    """Wait for a worker: ("ok", results) or (a failure kind, what to report)."""
    process, receive = worker
    try:
        kind, payload = receive.recv()
    except EOFError:
        kind, payload = "error", "a worker stopped unexpectedly"
    process.join()
    return kind, payload


def collect(workers: list[Worker]) -> list[Any]:
    """Every worker's results, in order, once all are done; raise RenderFailed or
    WriteError if one failed."""
    results: list[Any] = []
    problem: Exception | None = None
    for worker in workers:
        kind, payload = _outcome(worker)
        if kind == "ok":
            results.extend(payload)
        elif problem is None:
            problem = RenderFailed(payload) if kind == "finding" else WriteError(str(payload))
    if problem is not None:
        raise problem
    return results


def stop_workers(workers: list[Worker]) -> None:
    """Kill workers (after a failure elsewhere)."""
    for process, _ in workers:
        if process.is_alive():
            process.kill()
        process.join()


def _work(job: Callable[[FilePool], list[Any]], describe: Describe, root: Path,
          replace: bool, send: Connection) -> None:
    """A worker's life: do its job with a pool writing below root, send back the results
    or what went wrong."""
    _die_with_parent()
    _quiet_on_stop()
    pool = FilePool(root, replace)
    try:
        results = job(pool)
        pool.close()
        send.send(("ok", results))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the build
        pool.close(cancel=True)
        finding = describe(exc)
        if finding is not None:
            send.send(("finding", finding))
        else:
            send.send(("error", f"render worker: {exc!r}"))
    finally:
        send.close()


def _write_stories(chunk: Sequence[tuple[LoadedStory, str]], render: RenderUnit,
                   pool: FilePool) -> list[RenderedStory]:
    results = []
    for item, key in chunk:
        outputs, record = render(item, key)
        _write_outputs(outputs, pool)
        results.append(record)
    return results


def _write_units(chunk: Sequence[Callable[[], Iterable[Output]]], pool: FilePool
                 ) -> list[tuple[tuple[str, ...], int]]:
    # Written as made: a sitemap comes a part at a time.
    return [_write_outputs(render(), pool) for render in chunk]


def _write_outputs(outputs: Iterable[Output], pool: FilePool) -> tuple[tuple[str, ...], int]:
    """Write outputs below the pool's root, each as it comes; their files and size."""
    files, size = [], 0
    for output in outputs:
        relative = relative_file(output.path)
        pool.write(relative, output.data)
        files.append(relative)
        size += len(output.data)
    return tuple(files), size


def _quiet_on_stop() -> None:
    """A worker leaves stopping to its parent: Ctrl-C (sent to the whole process group)
    is the parent's to handle, and a stop signal ends the worker without a traceback
    (it may have inherited desk serve's handler, which raises KeyboardInterrupt). The
    signals held while it was forked are let in once these handlers are set."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    _let_stop_signals_in()


def _die_with_parent() -> None:
    """Linux: a killed build takes its workers with it, so nothing writes after it."""
    prctl = getattr(ctypes.CDLL(None), "prctl", None)  # the C library, as desk.build.heap finds it
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
