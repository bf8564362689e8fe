"""What a deploy does: compare the built site with the bucket and list the uploads (in
deploy order) and the deletions.

What is in the bucket comes from its listing, which is authoritative: every key, size and
ETag. desk's manifest (written last by each complete deploy) adds what a listing cannot
say: the headers desk gave each object, and its MD5 where the ETag is not one (SSE-KMS,
multipart). A manifest entry counts only while the listed object still has the ETag and
size that deploy recorded; otherwise a plain ETag is taken as the MD5 it is for
single-part uploads, and an object known neither way is uploaded again.

Content-hashed files that a new version replaced under another name (a stylesheet,
Pagefind's index chunks, which all get new names whenever a story changes) stay a while
after the deploy that replaced them, so that pages still in caches keep their styles and
search; the manifest remembers since when, and a later deploy deletes them.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from desk.build.writer import CHANGES, MARKER
from desk.config import CacheControl
from desk.deploy.headers import Headers, headers_for
from desk.render.kinds import KINDS, Kind, kind_of

MANIFEST = ".desk-deploy.json.gz"
_FORMAT = "desk-deploy/1"
_MD5 = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class LocalFile:
    """One file of the built site."""

    path: str
    size: int
    md5: str
    kind: Kind
    headers: Headers


@dataclass(frozen=True)
class Remote:
    """One object in the bucket, as listed."""

    size: int
    etag: str


@dataclass(frozen=True)
class Entry:
    """What the manifest says about one object."""

    md5: str
    size: int
    etag: str
    headers: Headers | None  # None: desk did not set them (found by the listing alone)


@dataclass(frozen=True)
class Manifest:
    """What the last complete deploy recorded: its objects, and the replaced content-hashed
    files it kept, with the time each was replaced."""

    entries: dict[str, Entry] = field(default_factory=dict)
    replaced: dict[str, datetime] = field(default_factory=dict)
    site_id: str = ""  # the site that deploy put up ("" when not known)


@dataclass(frozen=True)
class Plan:
    """Uploads in deploy order, then deletions; and what stays."""

    uploads: tuple[LocalFile, ...]
    deletes: tuple[str, ...]
    unchanged: tuple[tuple[LocalFile, Entry], ...]
    vouched: int  # objects whose manifest entry matched the listing
    kept: dict[str, datetime]  # replaced content-hashed files not deleted yet
    # Files of the site that a folder of changes does not hold: left as they are.
    carried: dict[str, Entry] = field(default_factory=dict)

    @property
    def upload_bytes(self) -> int:
        """Bytes the uploads send."""
        return sum(f.size for f in self.uploads)

    @property
    def capped(self) -> tuple[str, ...]:
        """The deletions --max-deletes counts: all but replaced content-hashed files."""
        return tuple(p for p in self.deletes if kind_of(p) != "asset")


def scan_site(site: Path, cache_control: CacheControl) -> list[LocalFile]:
    """Every file of the site but desk's marker, with its MD5, kind and headers."""
    files = []
    for folder, _, names in os.walk(site):
        for name in names:
            source = Path(folder, name)
            path = source.relative_to(site).as_posix()
            if path in (MARKER, CHANGES):
                continue
            data = source.read_bytes()
            kind = kind_of(path)
            files.append(LocalFile(path, len(data), hashlib.md5(data).hexdigest(), kind,
                                   headers_for(path, kind, cache_control)))
    return files


class NotCarried(Exception):
    """A folder of changes leaves out a file the bucket does not hold as it should."""


def make_plan(files: list[LocalFile], listing: dict[str, Remote], manifest: Manifest,
              now: datetime, keep_replaced: timedelta,
              site: frozenset[str] | None = None) -> Plan:
    """Upload what is missing or different, delete what the site no longer has (replaced
    content-hashed files once they have been kept for keep_replaced).

    `site`: every file of the site, when `files` are only the changes to it; the others
    must be in the bucket as the manifest recorded them, else NotCarried is raised.
    """
    uploads: list[LocalFile] = []
    unchanged: list[tuple[LocalFile, Entry]] = []
    vouched = 0
    for local in files:
        remote = listing.get(local.path)
        if remote is None:
            uploads.append(local)
            continue
        entry = manifest.entries.get(local.path)
        if entry is not None and entry.etag == remote.etag and entry.size == remote.size:
            vouched += 1
        elif _MD5.match(remote.etag):
            entry = Entry(remote.etag, remote.size, remote.etag, None)
        else:
            uploads.append(local)  # neither the manifest nor the ETag tells its bytes
            continue
        same_headers = entry.headers is None or entry.headers == local.headers
        if entry.md5 == local.md5 and entry.size == local.size and same_headers:
            unchanged.append((local, entry))
        else:
            uploads.append(local)
    order = {kind: n for n, kind in enumerate(KINDS)}
    uploads.sort(key=lambda f: (order[f.kind], f.path))
    present = {f.path for f in files}
    carried = _carried(site - present, listing, manifest) if site is not None else {}
    vouched += len(carried)
    present |= set(carried)
    deletes: list[str] = []
    kept: dict[str, datetime] = {}
    for path in sorted(p for p in listing if p not in present and p != MANIFEST):
        since = manifest.replaced.get(path, now)
        if kind_of(path) == "asset" and now - since < keep_replaced:
            kept[path] = since
        else:
            deletes.append(path)
    return Plan(tuple(uploads), tuple(deletes), tuple(unchanged), vouched, kept, carried)


def _carried(absent: frozenset[str], listing: dict[str, Remote], manifest: Manifest
             ) -> dict[str, Entry]:
    """The manifest's entries of files left out of a folder of changes, each checked
    against the listing (an object changed since that deploy cannot be vouched for)."""
    carried: dict[str, Entry] = {}
    for path in sorted(absent):
        entry, remote = manifest.entries.get(path), listing.get(path)
        if entry is None or remote is None or (entry.etag, entry.size) != (remote.etag,
                                                                           remote.size):
            raise NotCarried(path)
        carried[path] = entry
    return carried


def encode_manifest(manifest: Manifest) -> bytes:
    """The manifest's bytes: compact JSON, gzipped, the same for the same manifest."""
    entries = manifest.entries
    table: dict[Headers | None, int] = {}
    files: dict[str, list[Any]] = {}
    for path in sorted(entries):
        entry = entries[path]
        index = table.setdefault(entry.headers, len(table))
        row: list[Any] = [entry.md5, entry.size, index]
        if entry.etag != entry.md5:
            row.append(entry.etag)
        files[path] = row
    headers = [None if h is None else [h.content_type, h.cache_control] for h in table]
    replaced = {p: manifest.replaced[p].isoformat() for p in sorted(manifest.replaced)}
    text = json.dumps({"format": _FORMAT, "site_id": manifest.site_id, "headers": headers,
                       "files": files, "replaced": replaced}, separators=(",", ":"),
                      ensure_ascii=False)
    return gzip.compress(text.encode("utf-8"), mtime=0)


def decode_manifest(data: bytes) -> Manifest:
    """The manifest; an unreadable or foreign one counts as none."""
    try:
        found = json.loads(gzip.decompress(data))
        if found.get("format") != _FORMAT:
            return Manifest()
        table = [None if h is None else Headers(str(h[0]), str(h[1]))
                 for h in found["headers"]]
        entries = {str(path): Entry(str(row[0]), int(row[1]),
                                    str(row[3]) if len(row) > 3 else str(row[0]),
                                    table[row[2]])
                   for path, row in found["files"].items()}
        replaced = {str(path): datetime.fromisoformat(when)
                    for path, when in found.get("replaced", {}).items()}
        return Manifest(entries, replaced, str(found.get("site_id", "")))
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        return Manifest()
