"""Tampering with a saved state's file (desk.build.state) as a test needs: its meta values,
its units' keys and its URL history's rows, edited in place as another program could."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from desk.build.state import SUFFIX


def state_files(cache_dir: Path) -> list[Path]:
    """The saved states in a cache folder."""
    return sorted(cache_dir.glob("*" + SUFFIX))


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        yield db


def edit_meta(path: Path, name: str, change: Callable[[Any], Any]) -> None:
    """Replace one meta value of a saved state by `change(value)`."""
    with _opened(path) as db:
        (value,) = db.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
        db.execute("UPDATE meta SET value = ? WHERE name = ?",
                   (json.dumps(change(json.loads(value))).encode(), name))


def edit_history_rows(path: Path, change: Callable[[list[str]], list[Any]]) -> None:
    """Replace the rows of a saved state's URL history (its chunks of lines, in order) by
    `change(rows)`, the number of chunks its meta says left as it is."""
    with _opened(path) as db:
        rows = [lines for (lines,) in db.execute("SELECT lines FROM history ORDER BY n")]
        db.execute("DELETE FROM history")
        db.executemany("INSERT INTO history VALUES (?, ?)", enumerate(change(rows)))


def set_unit_keys(path: Path, key: str) -> int:
    """Give every unit of a saved state the same key, where its digest is read (the
    units table) and where its record is (the unit log); the number of units."""
    with _opened(path) as db:
        rows = db.execute("SELECT n, ids, odd FROM unit_log").fetchall()
        for n, ids, odd in rows:
            others = {unit: [key, *record[1:]] for unit, record in json.loads(odd).items()}
            db.execute("UPDATE unit_log SET keys = ?, odd = ? WHERE n = ?",
                       ("\n".join(key for _ in ids.split("\n")) if ids else "",
                        json.dumps(others).encode(), n))
        return db.execute("UPDATE units SET key = ?", (key,)).rowcount


def inspected_rows(path: Path) -> dict[str, tuple[Any, ...]]:
    """Each inspected file's row in a saved state: its stat and blob id as saved."""
    with _opened(path) as db:
        rows = db.execute("SELECT path, mtime, size, ino, blob FROM inspected").fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}
