"""The only module that writes the site: into a staging folder, then swapped in whole.

A build writes every file into a fresh folder beside the output folder and only at the end
exchanges the two. If anything fails, or the process is killed, the output folder is
untouched; leftovers of a killed build are removed by the next one. desk only ever deletes
folders that carry its marker file.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

from desk import urls
from desk.render import Output

MARKER = ".desk-site"
_MARKER_TEXT = b"This folder was written by desk build; desk may replace it.\n"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class WriteError(Exception):
    """The output folder cannot be written or replaced."""


def site_id_of(out_dir: Path) -> str | None:
    """The id in a desk-made folder's marker (None when there is none)."""
    try:
        text = (out_dir / MARKER).read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("site-id: "):
            return line.removeprefix("site-id: ").strip()
    return None


def staging_prefix(out_dir: Path) -> str:
    """Name prefix of the staging folders of out_dir (hidden, beside it)."""
    return f".{out_dir.name}.desk-"


def check_output_folder(out_dir: Path) -> None:
    """Refuse to replace a folder desk did not create."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise WriteError(f"{out_dir}: exists and is not a folder; desk will not replace it")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
        raise WriteError(
            f"{out_dir}: folder has files but no {MARKER} marker, so desk did not create it "
            "and will not replace it; choose another --out or empty it"
        )


def remove_leftovers(out_dir: Path) -> None:
    """Delete staging folders a killed build left beside out_dir (only ones with a marker)."""
    parent = out_dir.parent
    if not parent.is_dir():
        return
    for entry in parent.iterdir():
        ours = entry.name.startswith(staging_prefix(out_dir))
        if ours and entry.is_dir() and not entry.is_symlink() and (
            (entry / MARKER).is_file() or not any(entry.iterdir())
        ):
            shutil.rmtree(entry)


class Staging:
    """A fresh folder to write a site into; swap_in() makes it the output folder."""

    def __init__(self, out_dir: Path) -> None:
        check_output_folder(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(out_dir)
        self.out_dir = out_dir
        self.path = out_dir.parent / (staging_prefix(out_dir) + uuid.uuid4().hex[:12])
        self.path.mkdir()
        (self.path / MARKER).write_bytes(_MARKER_TEXT)
        self.previous_id = site_id_of(out_dir)
        self.files = 0
        self.bytes = 0
        self._written: set[str] = set()
        self._made: set[Path] = set()

    def write(self, outputs: Iterable[Output]) -> None:
        """Write outputs; two outputs for one file is a bug, reported as an error."""
        for output in outputs:
            relative = urls.relative_file(output.path)
            target = self._claim(relative)
            target.write_bytes(output.data)
            self.files += 1
            self.bytes += len(output.data)

    def _claim(self, relative: str) -> Path:
        if relative in self._written:
            raise WriteError(f"two outputs for /{relative}")
        self._written.add(relative)
        target = self.path / relative
        folder = target.parent
        if folder not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(folder)
        return target

    def link_previous(self, files: tuple[str, ...]) -> bool:
        """Hard-link unchanged files from the current site instead of writing them again.

        All or nothing: on any failure the links made are removed and False returned, so
        the caller renders the unit instead. Staged files are never written in place, so
        a link can never change the live site.
        """
        linked: list[str] = []
        for relative in files:
            source = self.out_dir / relative
            try:
                if relative in self._written:
                    raise OSError("already staged")
                target = self._claim(relative)
                os.link(source, target)
                linked.append(relative)
                self.files += 1
                self.bytes += target.stat().st_size
            except OSError:
                self._written.discard(relative)
                for done in linked:
                    (self.path / done).unlink(missing_ok=True)
                    self._written.discard(done)
                    self.files -= 1
                return False
        return True

    def copy(self, source: Path, path: str) -> None:
        """Copy a file (a static asset) to a site path."""
        data = source.read_bytes()
        self.write([Output(path, data)])

    def swap_in(self, site_id: str) -> None:
        """Make the staged folder the output folder in one step; remove the old site."""
        (self.path / MARKER).write_bytes(_MARKER_TEXT + f"site-id: {site_id}\n".encode())
        out = self.out_dir
        if out.exists():
            if _exchange(self.path, out):
                # The staging path now holds the old site. It may still be being served
                # from; its files stay readable through open handles.
                shutil.rmtree(self.path)
                return
            # No atomic exchange on this system: two renames, the old site kept until the end.
            old = out.parent / (staging_prefix(out) + "old-" + uuid.uuid4().hex[:12])
            out.rename(old)
            self.path.rename(out)
            shutil.rmtree(old)
        else:
            self.path.rename(out)

    def discard(self) -> None:
        """Remove the staging folder (after a failed build)."""
        if self.path.exists():
            shutil.rmtree(self.path)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two folders (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(result == 0)
