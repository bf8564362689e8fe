"""Build targets: where a build's files go and how they replace the site, chosen by the
caller (never inferred from other arguments).

- `FreshStaging`: a new hidden folder beside the output, swapped in whole; the replaced
  site is removed. What `desk build --no-cache` uses.
- `RecycledSpare`: the same, but the site the last build replaced (kept as a spare folder)
  is recycled as the staging folder, and the site this build replaces becomes the next
  spare, so unchanged units cost nothing. What `desk build` uses.
- `ChangesOnly`: a new folder with only the files this build renders and the list of
  the files of the last site it no longer has, for `desk deploy` to a store that holds
  the rest. What the publish workflow uses on a fresh runner, which restores the build
  cache and no site.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from desk.build.writer import (
    ChangesStaging,
    SiteRecord,
    SiteWriter,
    Staging,
)


@dataclass(frozen=True)
class FreshStaging:
    """Write into a new folder and swap it in; remove the replaced site."""

    out_dir: Path


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


Target = FreshStaging | RecycledSpare | ChangesOnly


def open_writer(target: Target, spare: SiteRecord | None, base: SiteRecord | None = None
                ) -> SiteWriter:
    """The writer for a target (`spare`: what the cache knows of the spare folder; `base`:
    the site the saved state describes).

    Raises WriteError or OSError when the output folder cannot be used.
    """
    if isinstance(target, ChangesOnly):
        return ChangesStaging(target.out_dir, base)
    if isinstance(target, RecycledSpare):
        return Staging(target.out_dir, spare, keep_spare=True)
    return Staging(target.out_dir)
