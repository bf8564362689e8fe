"""Git's own record of which content files are unchanged since they were committed.

A fresh clone gives every file a new stat, so the inspection cache cannot tell an
unchanged story file from an edited one without reading and hashing it. Git can: its
index holds each tracked file's blob id, and the stat it saw when it wrote the file, so
`git ls-files --modified` lists the files that differ from the index for the price of a
stat each. A file git calls clean has the bytes of its blob, after git's conversion of
its line endings (core.autocrlf, eol attributes), which adds a byte to each line break:
so desk.build.cache takes git's word only for a file of the size it inspected. Its blob id
is then a second identity of those bytes (desk.build.cache compares it with the blob id of
the bytes it last inspected, computed by desk itself, never taken from git for a file it
read).

Anything unusual means no blob ids (and the bytes decide, as without git): no git, a
folder outside a work tree, a repository of another hash, a file git says is modified,
a symlink or submodule, an unmerged file.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from desk.background import Background

# How long git may take to list a large work tree before desk does without it.
_TIMEOUT = 60.0
# Variables that would point git at another repository, index or work tree than the
# one the folder is in: its answers would then be about other files.
_ELSEWHERE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


def blob_id(data: bytes) -> str:
    """The id git gives a blob of these bytes (in a SHA-1 repository)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data, usedforsecurity=False).hexdigest()


# One entry of `git ls-files --stage -v -z` that names a plain cached file ("H": not
# assume-unchanged nor skip-worktree), regular, merged (stage 0), with a 40-digit (SHA-1)
# blob id: a 64-digit one is SHA-256, not ours. Matched only where an entry begins (at
# the start or after a NUL, which no name holds), so no name can pass for an entry.
_ENTRY = re.compile(rb"(?:\A|(?<=\x00))H (?:100644|100755) ([0-9a-f]{40}) 0\t([^\x00]*)\x00")


def clean_blobs(folder: Path) -> dict[str, str]:
    """Each tracked regular file below `folder` that git holds unchanged from its index,
    with its blob id: (`folder` joined with the path below it, as the loader names files,
    blob id); none when git cannot tell."""
    with GitListing(folder) as listing:
        return listing.clean()


class GitListing:
    """git's two listings of a folder (every file's blob id, and the files modified),
    started together in the background, each into a file of its own: a build may start
    them before it reads its saved state, which takes longer, and read them when its
    inspection first asks git. A context manager: leaving it stops what still runs.

    git's word is as of its listing: a file saved again after it, at the same size,
    passes for clean. Started early, that window takes in the read of the state (seconds
    at 100,000 stories). Nothing edits a fresh runner's clone meanwhile; a file saved on a
    desk during that window is read by the next build (its record keeps its old stat)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._runs: list[Background] = []
        try:
            for args in (("ls-files", "--stage", "-v", "-z"), ("ls-files", "--modified", "-z")):
                # A file system monitor would let git skip the stat of each file: not here.
                self._runs.append(Background(
                    ["git", "-C", str(folder), "-c", "core.fsmonitor=false", *args],
                    _environment()))
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> GitListing:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def entries(self) -> Iterator[tuple[bytes, bytes]]:
        """Each clean file's (path below the folder joined to it, blob id), as bytes;
        none when git could not tell."""
        listed, modified = (run.outcome(_TIMEOUT) for run in self._runs)
        if listed.status != 0 or modified.status != 0:
            return
        dirty = set(modified.output.split(b"\x00"))
        prefix = os.path.join(os.fsencode(self.folder), b"")
        for found in _ENTRY.finditer(listed.output):
            blob, name = found.groups()
            if name not in dirty:
                yield prefix + name, blob

    def clean(self, held: Mapping[str, str] | None = None) -> dict[str, str]:
        """Each clean file's blob id, by its path (see clean_blobs); a path held already
        (`held`: each string by itself) named by that string, not by a second one."""
        if held is None:
            return {os.fsdecode(path): blob.decode("ascii") for path, blob in self.entries()}
        get = held.get
        return {get(name, name): blob.decode("ascii")
                for path, blob in self.entries() for name in (os.fsdecode(path),)}

    def close(self) -> None:
        """Stop git where it still runs and drop what it wrote."""
        for run in self._runs:
            run.stop()


def checked_out_since(folder: Path, saved: Path) -> bool:
    """Whether git's index of the work tree holding `folder` was written after the file
    `saved` (a fresh clone, a checkout or a commit since): the stats of the files there
    may all be new, so a build will likely ask git which are unchanged."""
    try:
        saved_at = saved.stat().st_mtime_ns
    except OSError:
        return False  # nothing saved: every file is read anyway
    for top in (folder, *folder.parents):
        if (top / ".git").exists():
            try:
                return (top / ".git" / "index").stat().st_mtime_ns > saved_at
            except OSError:  # .git is a file (a linked work tree) or holds no index
                return False
    return False


class CleanFiles:
    """The files git holds unchanged, each held as one number made from its path and
    blob id: a set of them is a third of the size of a mapping of paths to blob ids (a
    fresh runner's build holds one for every story file while it inspects them)."""

    def __init__(self, files: Iterable[tuple[str | bytes, str | bytes]]) -> None:
        self._held = frozenset(_file_number(_named(path, blob)) for path, blob in files)

    @classmethod
    def of_listing(cls, listing: GitListing) -> CleanFiles:
        """The files git holds unchanged by its listing (clean_blobs), never decoded."""
        return cls(listing.entries())

    def holds(self, path: str, blob: str) -> bool:
        """Whether git holds the file at `path` unchanged with the bytes of this blob."""
        return _file_number(_named(path, blob)) in self._held


def _named(path: str | bytes, blob: str | bytes) -> bytes:
    """A file and blob id as one string of bytes (the path's own bytes on the disk, as
    the file system encoding makes them: git's listing gives those)."""
    return os.fsencode(path) + b"\x00" + (blob if isinstance(blob, bytes) else blob.encode())


def _file_number(named: bytes) -> int:
    # 128 bits of a cryptographic hash: no two files' numbers meet by chance or design.
    return int.from_bytes(hashlib.blake2b(named, digest_size=16).digest())


def _environment() -> dict[str, str]:
    """This process's environment, git's location variables left out; git takes no
    optional locks (it only reads)."""
    kept = {k: v for k, v in os.environ.items() if k not in _ELSEWHERE}
    return {**kept, "GIT_OPTIONAL_LOCKS": "0"}
