"""The content's file lists kept by a long-running process (desk serve) between saves.

A walk of every folder of content/ costs tens of milliseconds at ten thousand stories;
the watcher names the files a save changed, so the lists are brought up to date from
those names alone. Any change the names cannot settle on their own (a folder, a
symlink, a hidden name, a name that is not a story file) walks again.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable
from pathlib import Path

from desk.content.findings import Finding
from desk.content.loader import content_files

# How a folder's files are listed: content_files, or as a survey listed them.
Walk = Callable[[Path, str, list[Finding]], list[str]]


class ContentListing:
    """`content_files` of each folder of the content, as of the last walk or update."""

    def __init__(self) -> None:
        self._content: Path | None = None
        self._files: dict[str, list[str]] = {}  # by folder of content/, sorted

    def files(self, content: Path, folder: str, findings: list[Finding],
              changed: set[str] | None, walk: Walk = content_files) -> list[str]:
        """What `content_files(content, folder, findings)` gives, after the files in
        `changed` changed (None: not known which, so every folder is walked: by `walk`,
        which may give the lists a survey made)."""
        if content != self._content:
            self._content, self._files = content, {}
        known = self._files.get(folder)
        if known is None or changed is None or not _update(known, content, folder, changed):
            found: list[Finding] = []
            known = list(walk(content, folder, found))
            findings += found
            if found:
                self._files.pop(folder, None)  # a folder that could not be read: walk again
                return known
            self._files[folder] = known
        return list(known)


def _update(files: list[str], content: Path, folder: str, changed: set[str]) -> bool:
    """Bring a folder's sorted list up to date with the changed files; False when the
    names alone cannot tell (the list is then left half done: walk again)."""
    top = str(content / folder) + os.sep
    real_top = (content / folder).resolve()
    for path in sorted(changed):
        if not path.startswith(top):
            continue
        relative = path[len(top):]
        if not relative.endswith(".json") or any(
                part.startswith(".") or not part for part in relative.split(os.sep)):
            return False
        at = bisect.bisect_left(files, path)
        listed = at < len(files) and files[at] == path
        if os.path.lexists(path):
            if os.path.islink(path) or not os.path.isfile(path) or (
                    Path(path).resolve() != real_top / relative):
                return False  # a symlink, a folder, or below a symlinked folder
            if not listed:
                files.insert(at, path)
        elif listed:
            del files[at]
        else:
            return False  # gone, and never listed as a file: it may have been a folder
    return True
