"""A command run in the background, its output kept in a temporary file.

A build starts such a command (git's listing of the content, a Pagefind run) and goes on
with its own work on the other core; it reads the outcome when it needs it. The output
goes to a file rather than a pipe, so the command never waits for a reader.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Outcome:
    """How a command ended: its exit status (None: it could not start, or ran out of
    time) and what it printed (with the errors, when they were asked for)."""

    status: int | None
    output: bytes = b""
    problem: str = ""  # why there is no status


class Background:
    """One command running in the background. A context manager: leaving it stops the
    command if it still runs and drops its output."""

    def __init__(self, command: Sequence[str], env: Mapping[str, str] | None = None,
                 with_errors: bool = False) -> None:
        self._output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop)
        self._process: subprocess.Popen[bytes] | None = None
        self._problem = ""
        try:
            self._process = subprocess.Popen(
                list(command), stdin=subprocess.DEVNULL, stdout=self._output,
                stderr=subprocess.STDOUT if with_errors else subprocess.DEVNULL,
                env=None if env is None else dict(env))
        except (OSError, subprocess.SubprocessError) as exc:
            self._problem = str(exc)

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def outcome(self, timeout: float) -> Outcome:
        """Wait at most `timeout` seconds for the command (stopping it after that)."""
        process = self._process
        if process is None:
            return Outcome(None, problem=self._problem)
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            self.stop()
            return Outcome(None, problem=str(exc))
        self._output.seek(0)
        return Outcome(status, self._output.read())

    def stop(self) -> None:
        """Stop the command if it still runs, wait for it and drop its output."""
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._output.close()
