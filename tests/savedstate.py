"""Tampering with an index's file (desk.build.state) as a test needs: its rows, edited in
place as another program could."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from desk.build.state import SUFFIX


def state_files(cache_dir: Path) -> list[Path]:
    """The saved indexes in a cache folder."""
    return sorted(cache_dir.glob("*" + SUFFIX))


@contextlib.contextmanager
def opened(path: Path) -> Iterator[sqlite3.Connection]:
    """An index's file, opened to be edited (committed on leaving)."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        yield db


def execute(path: Path, statement: str, *values: Any) -> int:
    """Run one statement on an index's file: the rows it changed."""
    with opened(path) as db:
        return db.execute(statement, values).rowcount


def set_unit_keys(path: Path, key: str) -> int:
    """Give every unit of an index the same key: the number of units."""
    return execute(path, "UPDATE unit SET key = ?", key)


def inspected_rows(path: Path) -> dict[str, tuple[Any, ...]]:
    """Each inspected file's row in an index: its stat and blob id as saved."""
    with opened(path) as db:
        rows = db.execute("SELECT path, mtime, size, ino, blob FROM file").fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}
