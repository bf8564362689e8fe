"""The preview's own folder in the site's cache folder: its index (the inspections of the
content, its images' records) and the templates' compiled code, no site. Its name holds
neither the preview's port nor its host, so every preview of a site, on any port, starts
from the index the last one kept.

Previews of desk before pages were made in memory kept a whole site there (gigabytes at
100,000 stories): what they left is moved into the trash and deleted by a process of
its own (desk.serve.trash), so a start never waits for it.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

from desk.build.cache import BuildCache
from desk.build.lock import writing
from desk.serve import trash as trash_script

PREVIEW = "preview"
TRASH = "trash"
# What older previews left: their site, its build cache, the record of their last site.
_LEFTOVERS = ("site", "cache", "resume.json")
_LOCK = ".preview.lock"


class PreviewFolder:
    """Where previews of a site keep their index (`index`), shared by those that run at
    once: each writes it in one transaction, under the folder's lock."""

    def __init__(self, cache_dir: Path | None) -> None:
        """The site's preview folder in `cache_dir` (None: the settings cannot be read
        now, so a temporary folder, removed at close)."""
        self.shared = cache_dir is not None
        self.path = ((cache_dir / PREVIEW) if cache_dir is not None
                     else Path(tempfile.mkdtemp(prefix="desk-serve-")))
        # The process emptying the trash, last started (None: none yet, or none could be).
        self.emptying: subprocess.Popen[bytes] | None = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._clear_leftovers()
        except OSError:
            self.shared = False
            self.path = Path(tempfile.mkdtemp(prefix="desk-serve-"))

    @property
    def index(self) -> Path:
        """Where the preview's index is saved (named as the build names an output
        folder's: see BuildCache.file_for)."""
        return BuildCache.file_for(self.path, self.path / "index")

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Held while the index is written: one preview at a time."""
        with writing([(self.path / _LOCK, self.path)], "preview"):
            yield

    def _clear_leftovers(self) -> None:
        """Move what an older preview left into the trash, then empty it."""
        trash = self.path / TRASH
        found = [self.path / name for name in _LEFTOVERS if (self.path / name).exists()]
        if not found and not (trash.is_dir() and any(trash.iterdir())):
            return
        trash.mkdir(exist_ok=True)
        for entry in found:
            entry.rename(trash / uuid.uuid4().hex)
        self._empty_trash(trash)

    def _empty_trash(self, trash: Path) -> None:
        """Delete the trash in the background by a process of its own, which outlives the
        preview if it must."""
        try:
            self.emptying = subprocess.Popen(
                [sys.executable, "-I", str(Path(trash_script.__file__)), str(trash)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True)
        except (OSError, subprocess.SubprocessError):
            self.emptying = None  # the next start empties it
            return
        # Waited for, so that it leaves no zombie behind while the preview runs.
        threading.Thread(target=self.emptying.wait, daemon=True, name="desk-cleanup").start()

    def close(self) -> None:
        """Remove a temporary folder (a shared one stays for the next preview)."""
        if not self.shared:
            shutil.rmtree(self.path, ignore_errors=True)
