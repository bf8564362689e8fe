"""Build modes: the few situations a newsroom builds in, named once, from the flags.

- **publish** (no flag): render what changed since the last build; swap the site in whole.
- **changes** (--changes-only): the same, writing only the changed files and the list of
  every file, for `desk deploy` from a runner that restored the cache but not the site.
- **rebuild** (--render-all): render every page again (the cache's inspections and URL
  history still count); with --changes-only, the changes are the whole site.
- **fresh** (--no-cache): from nothing, into a fresh folder; no cache read or saved.

Policies that go with any mode: --hold-back, --drafts, --future, --no-search. A
combination that makes no sense is refused (`ModeError`), never quietly reinterpreted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from desk.build.target import ChangesOnly, FreshStaging, RecycledSpare, Target


class Mode(StrEnum):
    """The situations a build is run in."""

    PUBLISH = "publish"
    CHANGES = "changes"
    REBUILD = "rebuild"
    FRESH = "fresh"


class ModeError(ValueError):
    """Flags that name no situation (the message says which and why)."""


@dataclass(frozen=True)
class Flags:
    """The build flags that choose a mode or a policy."""

    no_cache: bool = False
    changes_only: bool = False
    render_all: bool = False
    drafts: bool = False


@dataclass(frozen=True)
class BuildMode:
    """A named situation: where files go and what of the cache is used."""

    mode: Mode
    changes_only: bool = False  # only the changes are written (with rebuild: all of them)

    @property
    def uses_cache(self) -> bool:
        """Whether the build reads and saves the build cache."""
        return self.mode is not Mode.FRESH

    @property
    def keeps_pages(self) -> bool:
        """Whether pages the last build rendered may be kept as they are."""
        return self.mode in (Mode.PUBLISH, Mode.CHANGES)

    def target(self, out_dir: Path) -> Target:
        """Where this mode's files go."""
        if self.mode is Mode.FRESH:
            return FreshStaging(out_dir)
        return ChangesOnly(out_dir) if self.changes_only else RecycledSpare(out_dir)


# Combinations refused, with why: (flag, other flag, the reason).
_REFUSED: tuple[tuple[str, str, str], ...] = (
    ("no_cache", "changes_only", "--changes-only needs the build cache; drop --no-cache"),
    ("no_cache", "render_all", "--no-cache already renders every page; drop --render-all"),
    ("drafts", "changes_only", "--drafts makes a preview; --changes-only makes the changes of "
     "the live site for a deploy: drafts would be published. Drop one"),
)


def build_mode(flags: Flags) -> BuildMode:
    """The mode the flags name, or ModeError for a combination that makes no sense."""
    for one, other, reason in _REFUSED:
        if getattr(flags, one) and getattr(flags, other):
            raise ModeError(reason)
    if flags.no_cache:
        return BuildMode(Mode.FRESH)
    if flags.render_all:
        return BuildMode(Mode.REBUILD, changes_only=flags.changes_only)
    return BuildMode(Mode.CHANGES, True) if flags.changes_only else BuildMode(Mode.PUBLISH)
