"""Shared fixtures: a content folder in tmp_path, and running the desk CLI in-process."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from storygen import REPO  # noqa: E402

from desk.cli import main  # noqa: E402

NOW = "2026-11-15T00:00:00Z"

# No property test is timed: speed targets live in `make bench`, and on a machine shared
# by several builds one example can take longer than hypothesis' default 200 ms deadline.
settings.register_profile("desk", deadline=None)
settings.load_profile("desk")


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def desk() -> Callable[..., Result]:
    """Run `desk ARGS` in-process with the repository's configuration."""
    def run(*args: str) -> Result:
        runner = CliRunner()
        os.environ.pop("GITHUB_STEP_SUMMARY", None)
        result = runner.invoke(main, [*args[:1], "--config", str(REPO / "pyproject.toml"),
                                      *args[1:]], catch_exceptions=False)
        return Result(result.exit_code, result.stdout, result.stderr)
    return run


@pytest.fixture
def content(tmp_path: Path) -> Path:
    """An empty content folder."""
    folder = tmp_path / "content"
    (folder / "stories").mkdir(parents=True)
    return folder


def write_tree(files: dict[str, bytes], folder: Path) -> Path:
    """Files (as `tree` gives them) written out below a folder; the folder."""
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def child_pids(pid: int | str = "self") -> set[int]:
    """The processes that process `pid` forked, zombies included (Linux's /proc). A thread
    may end while its children are read: they go to another thread, so read all again."""
    for tries in itertools.count(1):
        try:
            return {int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                    for child in (task / "children").read_text().split()}
        except FileNotFoundError:
            if tries == 100 or not Path(f"/proc/{pid}").exists():
                raise
    raise AssertionError("unreachable")


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below folder with its bytes (for before/after comparisons)."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules of long-running tests (marked slow) first, in their own order: run
    on several cores (`make test`), a long test then starts while the other workers have
    short ones left, not last and alone. Whole modules, so that their fixtures of module
    scope are made once."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


def read_until(stream: Iterable[str], lines: list[str], *starts: str) -> list[str]:
    """A process's lines read into `lines` until one begins with one of `starts`."""
    for line in stream:
        lines.append(line)
        if line.startswith(starts):
            break
    return lines
