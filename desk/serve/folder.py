"""The preview's own folder: one per site, in the site's cache folder, reused from one
`desk serve` to the next.

A preview that is killed, or whose terminal is closed, leaves its folder behind; the
next preview of the site clears it as it starts (in the background: at 100,000 stories
the last site is gigabytes). So whatever happened, a site has at most one preview folder.
It holds the last preview's site and build cache, which the next preview starts from
(re-rendering only what differs), and the trash. The folder is guarded by the same kind
of lock as a build's output folder; a second
preview of the same site, started while the first runs, works in a temporary folder of
its own and removes it when it stops.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

from desk.build.lock import LockBusy, writing
from desk.serve import trash as trash_script

PREVIEW = "preview"
TRASH = "trash"
SITE = "site"
CACHE = "cache"
RECORD = "resume.json"  # what the last preview's site was built from (desk.serve.resume)
_LOCK = ".preview.lock"


class PreviewFolder:
    """Where one running preview keeps its site (`path`), until close()."""

    def __init__(self, cache_dir: Path | None) -> None:
        """The site's preview folder in `cache_dir` (None: the settings cannot be read
        yet, so a temporary folder)."""
        self._held = contextlib.ExitStack()
        shared = (cache_dir or Path()) / PREVIEW
        self.shared = cache_dir is not None
        try:
            if self.shared:
                shared.mkdir(parents=True, exist_ok=True)
                self._held.enter_context(writing([(shared / _LOCK, shared)], "preview",
                                                 wait=False))
        except (LockBusy, OSError):
            self.shared = False
        self.path = shared if self.shared else Path(tempfile.mkdtemp(prefix="desk-serve-"))
        # The process emptying the trash, last started (None: none yet, or none could be).
        self.emptying: subprocess.Popen[bytes] | None = None
        if self.shared:
            self._clear_leftovers()

    @property
    def site(self) -> Path:
        """Where the preview's site is built."""
        return self.path / SITE

    @property
    def cache(self) -> Path:
        """Where the preview's build cache is saved, beside its site (the next preview
        starts from both when they still describe the content)."""
        return self.path / CACHE

    def _clear_leftovers(self) -> None:
        """Move what a stopped or dead preview left into the trash, then empty it: all but
        its site, its cache and its record (the build checks that the first two still
        belong together, the record says whether its site is current)."""
        trash = self.path / TRASH
        trash.mkdir(exist_ok=True)
        for entry in self.path.iterdir():
            if entry.name not in (TRASH, _LOCK, SITE, CACHE, RECORD):
                entry.rename(trash / uuid.uuid4().hex)
        if any(trash.iterdir()):
            self.throw_away_later(None)

    def throw_away_later(self, folder: Path | None) -> None:
        """Move a folder into the trash (None: only empty it), deleted in the background
        by a process of its own (desk.serve.trash), which outlives the preview if it must:
        a stop, even by a closed terminal, leaves less for the next start to delete."""
        trash = self.path / TRASH
        trash.mkdir(exist_ok=True)
        if folder is not None:
            folder.rename(trash / uuid.uuid4().hex)
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
        """Let the next preview have the folder (a temporary one is removed now)."""
        self._held.close()
        if not self.shared:
            shutil.rmtree(self.path, ignore_errors=True)

