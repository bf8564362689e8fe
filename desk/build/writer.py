"""The only module that writes the site: into a staging folder, then swapped in whole.

A build writes every file into a fresh folder beside the output folder and only at the end
exchanges the two. If anything fails, or the process is killed, the output folder is
untouched; leftovers of a killed build are removed by the next one. desk only ever deletes
folders that carry its marker file.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Protocol

import orjson

from desk import urls
from desk.render import Output

MARKER = ".desk-site"
# In a folder of changes (`desk build --changes-only`): the site the changes apply to, the
# count of the whole site's files, and the files of that site the new one no longer has.
CHANGES = ".desk-changes.json"
CHANGES_FORMAT = "desk-changes/2"
_MARKER_TEXT = b"This folder was written by desk build; desk may replace it.\n"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_IO_THREADS = 4
_MAX_PENDING = 512


class WriteError(Exception):
    """The output folder cannot be written or replaced."""


class LastSiteIncomplete(WriteError):
    """A file the last build made, and this one meant to keep, is not there (a site
    restored in part, or changed by hand): the build starts again from nothing."""


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


def spare_path(out_dir: Path) -> Path:
    """Where the site before the current one is kept, to be recycled by the next build."""
    return out_dir.parent / (staging_prefix(out_dir) + "spare")


class UnitFiles(Protocol):
    """A unit as the writer sees it: the key it was rendered under and its files."""

    @property
    def key(self) -> str: ...
    @property
    def files(self) -> tuple[str, ...]: ...
    @property
    def usual(self) -> int:
        """The count of its files when they are the usual ones in the unit's folder
        (told by the record, which checked it when made), else 0."""


@dataclass(frozen=True)
class SiteRecord:
    """What the build cache knows of a built site (the live one, or the spare folder):
    its id and its files, by unit (each with the key it was rendered under) and loose."""

    site_id: str
    units: Mapping[str, UnitFiles]
    loose: tuple[str, ...]


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
        ours = entry.name.startswith(staging_prefix(out_dir)) and entry != spare_path(out_dir)
        with contextlib.suppress(OSError):
            if ours and entry.is_dir() and not entry.is_symlink() and (
                (entry / MARKER).is_file() or not any(entry.iterdir())
            ):
                shutil.rmtree(entry, ignore_errors=True)


class SiteWriter(Protocol):
    """What a build needs of the thing that puts its files in place."""

    out_dir: Path
    path: Path
    previous_id: str | None
    files: int
    bytes: int

    @property
    def shares_files(self) -> bool: ...

    def write(self, outputs: Iterable[Output]) -> tuple[str, ...]: ...
    def copy(self, source: Path, path: str) -> None: ...
    def flush(self) -> None: ...
    def claim(self, relative: str) -> None: ...
    def adopt(self, files: tuple[str, ...], size: int) -> None: ...
    def keep(self, unit: str, record: UnitFiles) -> bool: ...
    def keep_many(self, records: Mapping[str, UnitFiles]) -> set[str]: ...
    def clear(self, folder: str) -> None: ...
    def loose_files(self, rendered: Callable[[], set[str]]) -> tuple[str, ...]: ...
    def swap_in(self, site_id: str) -> None: ...
    def discard(self) -> None: ...


# A unit's count of usual files (UnitFiles.usual), read for each of 155,000 units.
_USUAL = attrgetter("usual")


class FilePool:
    """Writes files below a root folder, and links and removes them in bulk from a pool of
    threads (a bounded queue keeps memory flat).

    A rendered file is written in the caller's thread: handed to a thread one by one,
    files came out slower (a cold build of 10,000 stories took 15.3-17.4 s against
    13.8-14.7 s, and more memory), as each thread contends with rendering for the
    interpreter; a link or removal job covers many files, so its threads rarely do.
    """

    def __init__(self, root: Path, replace: bool = False) -> None:
        self.root = root
        self._prefix = os.path.join(root, "")  # file names are made often: as strings
        # In a recycled folder a file may be a hard link shared with the live site: it is
        # unlinked first, never written through.
        self._write = _replace_file if replace else _write_file
        self._link = _relink_files if replace else _link_files
        self._pool = ThreadPoolExecutor(max_workers=_IO_THREADS, thread_name_prefix="desk-io")
        self._pending: deque[Future[None]] = deque()

    def write(self, relative: str, data: bytes) -> None:
        """Write a file now (its folder is made when missing)."""
        self._write(self._prefix + relative, data)

    def link_all(self, relatives: tuple[str, ...], source_root: Path) -> None:
        """Hard-link (or copy) files from another root to the same relative paths."""
        self._submit(self._link, self.root, (source_root, relatives))

    def remove_all(self, relatives: list[str]) -> None:
        """Delete files (and then their folders, when left empty)."""
        for i in range(0, len(relatives), 256):
            self._submit(_remove_files, self.root, relatives[i: i + 256])

    def _submit(self, task: Callable[[Path, Any], None], target: Path, arg: Any) -> None:
        self._pending.append(self._pool.submit(task, target, arg))
        while len(self._pending) > _MAX_PENDING:
            self._pending.popleft().result()

    def flush(self) -> None:
        """Wait for every file submitted so far (raises the first error)."""
        while self._pending:
            self._pending.popleft().result()

    def close(self, cancel: bool = False) -> None:
        """Finish (or cancel) the pending work and stop the threads."""
        if not cancel:
            self.flush()
        self._pool.shutdown(cancel_futures=cancel)


class StagedFiles:
    """The names of the files a build keeps, a unit with the usual files in its folder
    (urls.USUAL_FILES) noted by its folder: at 100,000 stories, 100,000 folders instead
    of 300,000 names held to the end of the build."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.folders: dict[str, int] = {}  # folder → the count of its usual files

    def __contains__(self, relative: str) -> bool:
        if relative in self.names:
            return True
        if not self.folders:
            return False
        count = self.folders.get(_folder_of(relative))
        return count is not None and relative[relative.rfind("/") + 1:] in urls.USUAL_FILES[count]

    def __len__(self) -> int:
        return len(self.names) + sum(self.folders.values())

    def __iter__(self) -> Iterator[str]:
        yield from self.names
        for folder, count in self.folders.items():
            for name in urls.USUAL_FILES[count]:
                yield folder[1:] + name


def _folder_of(relative: str) -> str:
    """The folder of a site file, as a unit names it ("a/b/index.html" → "/a/b/")."""
    return "/" + relative[:relative.rfind("/") + 1]


def keep_each(keep: Callable[[str, UnitFiles], bool], records: Mapping[str, UnitFiles]
              ) -> set[str]:
    """Each unit kept by `keep`, in order: the units it did not keep."""
    return {unit for unit, record in records.items() if not keep(unit, record)}


class Staging:
    """A folder to write a site into; swap_in() makes it the output folder.

    The folder is fresh, or — given what the build cache knows of the spare folder (the
    site before the current one, left by the last swap) — the spare itself, recycled: its
    units whose keys are unchanged stay where they are, the others are replaced (never
    written through, as files may be hard links shared with the live site), and files the
    new site lacks are deleted before the swap. Either way the live site is untouched until
    the one atomic exchange, and the replaced site becomes the next spare.
    """

    def __init__(self, out_dir: Path, spare: SiteRecord | None = None,
                 keep_spare: bool = False) -> None:
        check_output_folder(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(out_dir)
        self.out_dir = out_dir
        self.path = out_dir.parent / (staging_prefix(out_dir) + uuid.uuid4().hex[:12])
        self.previous_id = site_id_of(out_dir)
        self.files = 0
        self.bytes = 0
        # What is staged, in two sets: the files this build writes (or its workers), and
        # the files of the units it keeps, every one of which belongs to a unit.
        self._written: set[str] = set()
        self._kept = StagedFiles()
        # The folders (as unit ids: "/a/b/") of the names in either set: a kept unit of
        # usual files in no such folder cannot meet a staged file, told without its names.
        self._named: set[str] = set()
        self._keep_spare = keep_spare
        self._spare = self._adopt_spare(spare) if keep_spare else None
        if self._spare is None:
            self.path.mkdir()
        (self.path / MARKER).write_bytes(_MARKER_TEXT)  # no site id: not a finished site
        self._pool = FilePool(self.path, replace=self._spare is not None)

    def _adopt_spare(self, spare: SiteRecord | None) -> SiteRecord | None:
        """Take the spare folder as the staging folder if the build cache describes it."""
        folder = spare_path(self.out_dir)
        if not folder.is_dir() or folder.is_symlink():
            return None
        if spare is None or not spare.site_id or site_id_of(folder) != spare.site_id:
            remove_tree(folder)  # a spare nobody can describe is of no use
            return None
        folder.rename(self.path)
        return spare

    @property
    def shares_files(self) -> bool:
        """True when a staged file may be a hard link to the live site's: the staging
        folder is the recycled spare, or this build kept a unit by linking its files. A
        render worker, which writes before this process claims its files, then unlinks
        each file before writing it."""
        return self._spare is not None or bool(self._kept.names or self._kept.folders)

    def loose_files(self, rendered: Callable[[], set[str]]) -> tuple[str, ...]:
        """The staged files that belong to no unit (assets, feeds, sitemaps...);
        `rendered` gives the files of the units this build rendered (a kept unit's files
        are known to be a unit's: only what was written is looked up)."""
        return tuple(sorted(self._written - rendered()))

    def write(self, outputs: Iterable[Output]) -> tuple[str, ...]:
        """Write outputs, each as it comes (an output is not held after it is written);
        their files, relative to the site. Two outputs for one file is a bug, reported as
        an error."""
        written = []
        for output in outputs:
            relative = urls.relative_file(output.path)
            self.claim(relative)
            self._pool.write(relative, output.data)
            self.files += 1
            self.bytes += len(output.data)
            written.append(relative)
        return tuple(written)

    def flush(self) -> None:
        """Wait for the files submitted so far."""
        self._pool.flush()

    def claim(self, relative: str) -> None:
        """Note that a file is staged, written by this process or a render worker."""
        if relative in self._written or relative in self._kept:
            raise WriteError(f"two outputs for /{relative}")
        self._written.add(relative)
        self._named.add(_folder_of(relative))

    def adopt(self, files: tuple[str, ...], size: int) -> None:
        """Account for files a render worker wrote into the staging folder."""
        for relative in files:
            self.claim(relative)
        self.files += len(files)
        self.bytes += size

    def keep(self, unit: str, record: UnitFiles) -> bool:
        """Hard-link a unit's unchanged files (`record`: its key and files) from the
        current site instead of writing them again (nothing at all when the recycled
        spare already holds the unit under this key).

        False (nothing done) when a file is already staged. Staged files are never written
        in place, so a link can never change the live site.
        """
        if not self._count_kept(unit, record):
            return False
        files = record.files
        if self._spare is not None and unit:
            kept = self._spare.units.get(unit)
            if kept is not None and kept.key == record.key and kept.files == files:
                return True
        self._pool.link_all(files, self.out_dir)
        return True

    def keep_many(self, records: Mapping[str, UnitFiles]) -> set[str]:
        """Keep each unit as `keep` does, in turn: the units not kept."""
        return keep_each(self.keep, records)

    def _count_kept(self, unit: str, record: UnitFiles) -> bool:
        """Count a kept unit's files as staged (False, nothing counted: one already is)."""
        kept = self._kept
        # The record says whether the files are the usual ones: 155,000 units are kept
        # every hour at 100,000 stories, and testing their names again takes 3 µs each.
        count = record.usual
        if count:  # noted by its folder; its names made only if a staged name is there
            if unit in kept.folders or unit in self._named and any(
                    relative in self._written or relative in kept.names
                    for relative in record.files):
                return False
            kept.folders[unit] = count
            self.files += count
            return True
        # Other units by their names (a sealed search bundle: a thousand files), tested
        # as sets: 100,000 kept every hour at 100,000 stories.
        files = record.files
        folders = {_folder_of(relative) for relative in files}
        if (not self._written.isdisjoint(files) or not kept.names.isdisjoint(files)
                or not kept.folders.keys().isdisjoint(folders)
                and any(relative in kept for relative in files)):
            return False
        if len(set(files)) != len(files):
            twice = next(f for i, f in enumerate(files) if f in files[:i])  # rare: quadratic
            raise WriteError(f"two outputs for /{twice}")
        kept.names.update(files)
        self._named.update(folders)
        self.files += len(files)
        return True

    def _count_kept_many(self, records: Mapping[str, UnitFiles]) -> set[str]:
        """_count_kept for each unit: the units not counted. Units of usual files (an
        hour's 100,000 settled stories at 100,000 stories) are told by set operations
        over their folders, which no two of them share; any other makes it one by one."""
        usual = dict(zip(records, map(_USUAL, records.values()), strict=True))
        if not all(usual.values()):
            return {unit for unit, record in records.items()
                    if not self._count_kept(unit, record)}
        kept = self._kept
        refused = usual.keys() & kept.folders.keys()
        refused.update(unit for unit in usual.keys() & self._named if any(
            relative in self._written or relative in kept.names
            for relative in records[unit].files))
        if refused:
            usual = {unit: count for unit, count in usual.items() if unit not in refused}
        kept.folders.update(usual)
        self.files += sum(usual.values())
        return refused

    def copy(self, source: Path, path: str) -> None:
        """Copy a file (a static asset) to a site path."""
        data = source.read_bytes()
        self.write([Output(path, data)])

    def clear(self, folder: str) -> None:
        """Empty a folder of the staged site before a tool writes into it (in a recycled
        folder its files may be hard links shared with the live site)."""
        self._pool.flush()
        target = (self.path / urls.relative_file(folder)).parent  # folder: a path like /x/
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)

    def swap_in(self, site_id: str) -> None:
        """Make the staged folder the output folder in one step; the old site becomes the
        spare, or is removed."""
        if self._spare is not None:
            lacking = self._lacking(self._spare)
            self._pool.flush()
            self._pool.remove_all(lacking[::-1])
        self._pool.close()
        (self.path / MARKER).write_bytes(self._marker(site_id))
        out = self.out_dir
        remove: Callable[[Path], None] = remove_tree
        if self._keep_spare and out.is_dir():
            remove = self._keep_as_spare
        if out.exists():
            if _exchange(self.path, out):
                # The staging path now holds the old site. It may still be being served
                # from; its files stay readable through open handles.
                remove(self.path)
                return
            # No atomic exchange on this system: two renames, the old site kept until the end.
            old = out.parent / (staging_prefix(out) + "old-" + uuid.uuid4().hex[:12])
            out.rename(old)
            self.path.rename(out)
            remove(old)
        else:
            self.path.rename(out)

    def _lacking(self, site: SiteRecord) -> list[str]:
        """The files of a site the build cache knows (the spare, or the base of a folder
        of changes) that the staged site does not have, in order."""
        kept, written = self._kept, self._written
        lacking: list[str] = []
        folder_count = kept.folders.get
        for unit, record in site.units.items():
            count = record.usual
            if count and folder_count(unit) == count:
                continue  # kept with the same usual files (most units, every build)
            lacking += (f for f in record.files if f not in written and f not in kept)
        lacking += (f for f in site.loose if f not in written and f not in kept)
        return sorted(set(lacking))  # a file in two units or loose too: listed once

    def _marker(self, site_id: str) -> bytes:
        return _MARKER_TEXT + f"site-id: {site_id}\n".encode()

    def _keep_as_spare(self, old_site: Path) -> None:
        spare = spare_path(self.out_dir)
        if spare.exists():
            remove_tree(spare)
        if site_id_of(old_site) is None:
            remove_tree(old_site)  # not a finished site: nothing to recycle
            return
        old_site.rename(spare)

    def discard(self) -> None:
        """Remove the staging folder (after a failed build)."""
        self._pool.close(cancel=True)
        if self.path.exists():
            remove_tree(self.path)


class ChangesStaging(Staging):
    """Stages only the files a build renders, for a deploy to a store that holds the rest.

    Units whose keys are unchanged are taken to be where the last deploy put them: nothing
    is linked or copied, so a machine that kept nothing but the build cache (a fresh CI
    runner) need not restore the site. The folder says which site the changes apply to
    (`base`, as the build cache knows it), which the deploy checks against the store:
    changes to any other site are refused. It lists the files of that site the new one
    no longer has and counts the new one's files, never lists them: the deploy knows the
    base's files, and at 100,000 stories the whole list is 500,000 names to sort every
    hour. Its marker has no site id, so no later build takes it for a whole site.
    """

    def __init__(self, out_dir: Path, base: SiteRecord | None) -> None:
        super().__init__(out_dir)
        self._base = base if base is not None and base.site_id else None
        self.previous_id = self._base.site_id if self._base is not None else None

    def keep(self, unit: str, record: UnitFiles) -> bool:
        """Count the unit's files as part of the site; nothing is written (False: changes
        to nothing keep nothing, or a file is already staged)."""
        return bool(self.previous_id) and self._count_kept(unit, record)

    def keep_many(self, records: Mapping[str, UnitFiles]) -> set[str]:
        """Count each unit's files as `keep` does: the units not counted."""
        return self._count_kept_many(records) if self.previous_id else set(records)

    def swap_in(self, site_id: str) -> None:
        """Write the list of the changes, then swap the folder in."""
        head = {"format": CHANGES_FORMAT, "base": self.previous_id or "", "site_id": site_id,
                "files": self.files,
                "removed": self._lacking(self._base) if self._base is not None else []}
        self.flush()
        (self.path / CHANGES).write_bytes(orjson.dumps(head) + b"\n")
        super().swap_in(site_id)

    def _marker(self, site_id: str) -> bytes:
        return _MARKER_TEXT + f"changes-to: {self.previous_id or 'nothing'}\n".encode()


@dataclass(frozen=True)
class Changes:
    """A folder of changes as `desk build --changes-only` left it."""

    base: str  # the site id they apply to ("" for none: the files are the whole site)
    site_id: str
    count: int  # of the whole site's files
    removed: frozenset[str]  # the base's files the site no longer has

    def whole_site(self, base: Iterable[str], staged: Iterable[str]) -> frozenset[str]:
        """Every file of the site the changes make, from the files of the site they apply
        to and those the folder holds. Raises ValueError when they are not as many as the
        build made: `base` is not the site the build knew."""
        site = frozenset(base).difference(self.removed).union(staged)
        if len(site) != self.count:
            raise ValueError(f"{len(site)} files, where the build made {self.count}")
        return site


def changes_of(folder: Path) -> Changes | None:
    """The changes a folder holds (None: it holds a whole site). Raises ValueError when
    its list of changes is unreadable."""
    try:
        data = orjson.loads((folder / CHANGES).read_bytes())
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"{folder / CHANGES}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{folder / CHANGES}: unreadable ({exc})") from None
    try:
        if data.get("format") != CHANGES_FORMAT:
            raise ValueError("not a list of changes desk knows")
        count, removed = data["files"], data["removed"]
        if not isinstance(count, int) or not all(isinstance(f, str) for f in removed):
            raise ValueError("files must be a count and removed a list of names")
        return Changes(str(data["base"]), str(data["site_id"]), count, frozenset(removed))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{folder / CHANGES}: unreadable ({exc})") from None


def remove_tree(path: Path) -> None:
    """Delete a folder tree, many files at a time (see Staging on why threads help)."""
    files: list[str] = []
    levels: dict[int, list[str]] = {}
    for folder, _, names in os.walk(path):
        levels.setdefault(folder.count(os.sep), []).append(folder)
        files += [os.path.join(folder, name) for name in names]
    with ThreadPoolExecutor(max_workers=_IO_THREADS) as pool:
        list(pool.map(_remove_quietly, files, chunksize=64))
        for depth in sorted(levels, reverse=True):
            list(pool.map(_remove_quietly, levels[depth]))
    shutil.rmtree(path, ignore_errors=True)  # anything that appeared meanwhile


def _remove_quietly(path: str) -> None:
    # Another cleaner (a later build's leftover sweep) may have been first.
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(path) and not os.path.islink(path):
            os.rmdir(path)
        else:
            os.unlink(path)


# A new file, or an old one emptied, written through the file descriptor alone: a site
# is tens of thousands of small files, and Python's file objects cost more than writing.
_WRITE = os.O_WRONLY | getattr(os, "O_BINARY", 0)
_CREATE = _WRITE | os.O_CREAT | os.O_TRUNC
_NEW = _WRITE | os.O_CREAT | os.O_EXCL


def _write_file(target: str, data: bytes) -> None:
    try:
        fd = os.open(target, _CREATE, 0o666)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(target, _CREATE, 0o666)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written < len(data):  # rare (a signal, a full disk): the rest, piece by piece
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view):]


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def _replace_file(target: str, data: bytes) -> None:
    try:
        found: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        found = None
    if found is None or found.st_nlink > 1 or not stat.S_ISREG(found.st_mode):
        _write_new(target, data)  # the other name may be the live site's
        return
    # Only the recycled folder has this file: rewriting it in place spares the
    # allocation of a new file, the slowest thing this kind of disk does.
    fd = os.open(target, _WRITE)
    try:
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


def _write_new(target: str, data: bytes) -> None:
    """Write a file under a name that nothing else holds: what holds it is unlinked, and
    the file is made exclusively (O_EXCL). A link to the live site's file that another
    thread or process makes under the name meanwhile is never opened and written through
    (a render worker forked while this process was still linking its kept units)."""
    while True:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
        try:
            fd = os.open(target, _NEW, 0o666)
            break
        except FileExistsError:
            continue  # linked meanwhile: unlinked at the next turn
        except FileNotFoundError:
            os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _relink_files(root: Path, job: tuple[Path, tuple[str, ...]]) -> None:
    for relative in job[1]:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(root, relative))
    _link_files(root, job)


def _remove_files(root: Path, relatives: list[str]) -> None:
    for relative in relatives:
        path = os.path.join(root, relative)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        folder = os.path.dirname(path)
        # Folders left empty go too (a removed story's); a folder still in use stays.
        while folder != str(root):
            try:
                os.rmdir(folder)
            except OSError:
                break
            folder = os.path.dirname(folder)


def _link_files(root: Path, job: tuple[Path, tuple[str, ...]]) -> None:
    source_root, relatives = job
    for relative in relatives:
        source = os.path.join(source_root, relative)
        target = os.path.join(root, relative)
        try:
            link_or_copy(source, target)
        except FileNotFoundError:
            if not os.path.isfile(source):
                raise LastSiteIncomplete(f"{source}: a file of the last build is "
                                         "missing") from None
            os.makedirs(os.path.dirname(target), exist_ok=True)
            link_or_copy(source, target)


def link_or_copy(source: str | Path, target: str | Path) -> None:
    """Hard-link a file, or copy it on a file system that cannot link it there."""
    try:
        os.link(source, target)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copyfile(source, target)  # a file system without hard links


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
