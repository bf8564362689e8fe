"""Carry a deploy plan out: uploads kind by kind, deletions last, the manifest after all.

Every kind's uploads finish before the next kind's start (pages never link to files
that are not up yet), nothing is deleted until every upload succeeded, and the manifest
is written only when the bucket holds the whole site. A deploy that fails part way leaves
the old pages serving and the old manifest in place; the next run finds what did go up
by its ETag and sends the rest.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from desk.build.writer import Changes, changes_of, site_id_of
from desk.config import DeployConfig
from desk.deploy.plan import (
    Entry,
    LocalFile,
    Manifest,
    NotCarried,
    Plan,
    Remote,
    decode_manifest,
    encode_manifest,
    make_plan,
    scan_site,
)
from desk.deploy.store import Bucket, StoreError
from desk.render.kinds import KINDS

Say = Callable[[str], None]


class DeployError(Exception):
    """A deploy that was refused or did not finish; `outcome` tells how far it got."""

    def __init__(self, message: str, outcome: Outcome) -> None:
        super().__init__(message)
        self.outcome = outcome


# What a refused folder of changes leaves to do.
_BUILD_WHOLE = ("nothing was uploaded or deleted. Build the whole site (desk build without "
                "--changes-only) and deploy it.")


class ChangesRefused(DeployError):
    """A folder of changes made against another site than the bucket holds: nothing was
    done; build the whole site and deploy that."""


@dataclass
class Outcome:
    """What a deploy did (or, dry, would do)."""

    target: str
    dry_run: bool
    planned: Plan | None = None
    uploaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    log: list[tuple[str, str]] = field(default_factory=list)  # (put|delete, path), in order
    bytes: int = 0
    seconds: float = 0.0

    @property
    def unchanged(self) -> int:
        """Objects left as they were."""
        if self.planned is None:
            return 0
        return len(self.planned.unchanged) + len(self.planned.carried)


def deploy(site: Path, bucket: Bucket, settings: DeployConfig, dry_run: bool = False,
           threads: int = 16, say: Say | None = None) -> Outcome:
    """Make the bucket hold the built site in `site` (and, for a while, the content-hashed
    files it replaced); raise DeployError if it cannot."""
    started = time.perf_counter()
    tell = say or (lambda line: None)
    outcome = Outcome(str(bucket.target), dry_run)
    try:
        files = scan_site(site, settings.cache_control)
        changes = changes_of(site)
    except (OSError, ValueError) as exc:
        raise DeployError(f"cannot read the site: {exc}", outcome) from None
    try:
        listing = bucket.listing()
    except StoreError as exc:
        raise DeployError(f"cannot list {bucket.target}: {exc}", outcome) from None
    # What lives beside the site (the previews) is not the deploy's to change.
    left = tuple(settings.leave)
    listing = {path: remote for path, remote in listing.items() if not path.startswith(left)}
    clash = next((f.path for f in files if f.path.startswith(left)), None)
    if clash is not None:
        raise DeployError(f"the site has /{clash}, below a folder the deploy leaves alone "
                          "([tool.desk.deploy] leave); nothing was uploaded or deleted",
                          outcome)
    manifest = _manifest(bucket, listing, tell)
    plan = _plan(files, listing, manifest, changes, settings, outcome)
    outcome.planned = plan
    tell(f"{bucket.target}: {len(listing)} objects listed, {plan.vouched} vouched for by "
         f"the manifest; {len(plan.uploads)} to upload ({plan.upload_bytes:,} bytes), "
         f"{len(plan.deletes)} to delete, {len(plan.unchanged)} unchanged, "
         f"{len(plan.kept)} replaced and kept for now")
    if len(plan.capped) > settings.max_deletes:
        raise DeployError(
            f"the deploy would delete {len(plan.capped)} objects, more than the limit of "
            f"{settings.max_deletes} (--max-deletes, [tool.desk.deploy] max_deletes); nothing "
            "was uploaded or deleted. Check --to and --site, or raise the limit.", outcome)
    if not dry_run:
        site_id = changes.site_id if changes is not None else site_id_of(site) or ""
        _carry_out(plan, (site, site_id), bucket, outcome, threads, tell)
    outcome.seconds = time.perf_counter() - started
    return outcome


def _plan(files: list[LocalFile], listing: dict[str, Remote], manifest: Manifest,
          changes: Changes | None, settings: DeployConfig, outcome: Outcome) -> Plan:
    """The plan; for a folder of changes, only when the bucket holds the site they change."""
    keep = timedelta(minutes=settings.keep_replaced_minutes)
    if changes is None or not changes.base:
        # Changes to nothing are the whole site: every file of it was written.
        return make_plan(files, listing, manifest, datetime.now(UTC), keep)
    if changes.base != manifest.site_id:
        raise ChangesRefused(
            f"the folder holds changes to site {changes.base or '(none)'}, but the bucket "
            f"holds site {manifest.site_id or '(unknown)'}; {_BUILD_WHOLE}", outcome)
    try:
        site = changes.whole_site(manifest.entries, (f.path for f in files))
    except ValueError as exc:
        raise ChangesRefused(
            f"the bucket's manifest does not list the site the changes apply to ({exc}); "
            f"{_BUILD_WHOLE}", outcome) from None
    try:
        return make_plan(files, listing, manifest, datetime.now(UTC), keep, site)
    except NotCarried as exc:
        raise ChangesRefused(
            f"the bucket does not hold /{exc} as the last deploy left it, and the folder of "
            f"changes lacks it; {_BUILD_WHOLE}", outcome) from None


def _manifest(bucket: Bucket, listing: dict[str, Remote], tell: Say) -> Manifest:
    """The last complete deploy's manifest; none when it cannot be read (the listing
    alone is enough to go on)."""
    try:
        data = bucket.read_manifest(listing)
    except StoreError as exc:
        tell(f"{bucket.target}: the deploy manifest could not be read ({exc}); going by "
             "the listing's ETags")
        return Manifest()
    return decode_manifest(data) if data else Manifest()


def _carry_out(plan: Plan, site: tuple[Path, str], bucket: Bucket, outcome: Outcome,
               threads: int, tell: Say) -> None:
    """Uploads kind by kind, deletions, then the manifest of `site` (its folder and id)."""
    folder, site_id = site
    entries = {local.path: entry for local, entry in plan.unchanged} | plan.carried
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for kind in KINDS:
            batch = [f for f in plan.uploads if f.kind == kind]
            if batch:
                entries |= _upload(batch, folder, bucket, pool, outcome)
                tell(f"  {kind}: {len(batch)} uploaded")
    if plan.deletes:
        try:
            refused = bucket.delete(list(plan.deletes))
        except StoreError as exc:
            raise DeployError(f"deleting old objects failed: {exc}; every file is up, the "
                              "next deploy deletes them", outcome) from None
        kept = set(refused)
        outcome.deleted = [p for p in plan.deletes if p not in kept]
        outcome.log += [("delete", p) for p in outcome.deleted]
        tell(f"  deleted: {len(outcome.deleted)}")
        if refused:
            outcome.failed += refused
            raise DeployError(f"the store refused to delete {len(refused)} objects (first: "
                              f"{refused[0]}); the next deploy tries again", outcome)
    try:
        bucket.write_manifest(encode_manifest(Manifest(entries, plan.kept, site_id)))
    except StoreError as exc:
        raise DeployError(f"writing the deploy manifest failed: {exc}; the site is up, the "
                          "next deploy checks every object by its ETag", outcome) from None


def _upload(batch: list[LocalFile], site: Path, bucket: Bucket, pool: ThreadPoolExecutor,
            outcome: Outcome) -> dict[str, Entry]:
    """Upload one kind's files at once; raise DeployError after all tried if any failed."""
    def send(local: LocalFile) -> str:
        data = (site / local.path).read_bytes()
        if hashlib.md5(data).hexdigest() != local.md5:
            raise OSError("the file changed while the deploy ran")
        return bucket.put(local.path, data, local.headers)

    pending: dict[Future[str], LocalFile] = {pool.submit(send, f): f for f in batch}
    entries: dict[str, Entry] = {}
    errors: list[str] = []
    for future in as_completed(pending):
        local = pending[future]
        try:
            etag = future.result()
        except (*StoreError, OSError) as exc:
            outcome.failed.append(local.path)
            errors.append(f"{local.path}: {exc}")
            continue
        entries[local.path] = Entry(local.md5, local.size, etag or local.md5, local.headers)
        outcome.uploaded.append(local.path)
        outcome.log.append(("put", local.path))
        outcome.bytes += local.size
    if errors:
        raise DeployError(f"{len(errors)} upload(s) failed, so nothing later was uploaded "
                          f"or deleted and the old pages still serve (first: {errors[0]}); "
                          "run the deploy again to finish it", outcome)
    return entries
