"""Build targets: where a build's files go and how they replace the site, chosen by the
caller (never inferred from other arguments).

- `FreshStaging`: a new hidden folder beside the output, swapped in whole; the replaced
  site is removed. What `desk build --no-cache` and desk serve's full rebuilds use.
- `RecycledSpare`: the same, but the site the last build replaced (kept as a spare folder)
  is recycled as the staging folder, and the site this build replaces becomes the next
  spare, so unchanged units cost nothing. What `desk build` uses.
- `ChangesOnly`: a new folder with only the files this build renders and the list of
  the files of the last site it no longer has, for `desk deploy` to a store that holds
  the rest. What the publish workflow uses on a fresh runner, which restores the build
  cache and no site.
- `InPlace`: the output folder is updated where it stands, under a lock the server holds
  while it reads. What desk serve uses after a story is saved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from desk.build.writer import (
    ChangesStaging,
    Known,
    LiveFolder,
    SiteRecord,
    SiteWriter,
    Staging,
)


@dataclass(frozen=True)
class FreshStaging:
    """Write into a new folder and swap it in; remove the replaced site."""

    out_dir: Path
    # How the replaced site is removed (default: at once, before build() returns).
    remove_old: Callable[[Path], None] | None = None


@dataclass(frozen=True)
class RecycledSpare:
    """Write into the recycled spare folder (a new one when there is none) and swap it in;
    keep the replaced site as the next spare."""

    out_dir: Path


@dataclass(frozen=True)
class ChangesOnly:
    """Write only what changed since the site the saved state describes, and the list of
    that site's files it no longer has; swap it in; remove the replaced folder."""

    out_dir: Path


@dataclass(frozen=True)
class InPlace:
    """Update a desk-made folder where it stands, under `lock`."""

    out_dir: Path
    lock: threading.Lock
    # The files of the live folder, kept up to date by the writer between builds.
    present: set[str] = field(default_factory=set)
    # Bytes held before they are written out as the build goes (None: all held until
    # the build succeeds): for a folder no one is served from while it is built.
    spill: int | None = None
    # The folder's site id when its marker was cleared by the caller, and the files the
    # build changes (see desk.build.writer.Known).
    known: Known = field(default_factory=Known)


Target = FreshStaging | RecycledSpare | ChangesOnly | InPlace


def open_writer(target: Target, spare: SiteRecord | None, base: SiteRecord | None = None
                ) -> SiteWriter:
    """The writer for a target (`spare`: what the cache knows of the spare folder; `base`:
    the site the saved state describes).

    Raises WriteError or OSError when the output folder cannot be used.
    """
    if isinstance(target, InPlace):
        return LiveFolder(target.out_dir, target.lock, target.present, target.spill,
                          target.known)
    if isinstance(target, ChangesOnly):
        return ChangesStaging(target.out_dir, base)
    if isinstance(target, RecycledSpare):
        return Staging(target.out_dir, spare, keep_spare=True)
    return Staging(target.out_dir, remove_old=target.remove_old)
