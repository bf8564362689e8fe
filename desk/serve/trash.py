"""Empties a preview's trash, in a process of its own at a low priority.

What a preview throws away is a whole site (half a million files at 100,000 stories).
A thread of the preview deleting it held the interpreter against the preview's own start
and saves, which then took twice as long; a process of its own, niced, takes only what
the machine has spare. Run by its path in isolated mode (`python -I trash.py FOLDER`), so
it imports nothing but the standard library.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path


def empty(trash: Path) -> None:
    """Delete everything in the trash folder (another cleaner may be at it too)."""
    for entry in list(trash.iterdir()) if trash.is_dir() else ():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
    with contextlib.suppress(OSError):  # gone with its last entry (another may fill it)
        trash.rmdir()


def main(argv: list[str]) -> int:
    with contextlib.suppress(AttributeError, OSError):  # no nice on Windows
        os.nice(10)
    empty(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
