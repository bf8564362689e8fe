"""Removing a deploy preview: every object below its prefix, and nothing else.

The prefix is the preview's own (`s3://BUCKET/previews/pr-N/`, always ending in '/', so
`pr-1/` never takes `pr-10/` with it); a target without one is refused, so the bucket
itself cannot be emptied by mistake.
"""

from __future__ import annotations

from dataclasses import dataclass

from desk.deploy.store import Bucket, StoreError


class RemoveError(Exception):
    """The prefix cannot be removed (refused, or the store failed)."""


@dataclass(frozen=True)
class Removed:
    """What a removal did."""

    target: str
    deleted: int


def remove_prefix(bucket: Bucket) -> Removed:
    """Delete every object below the target's prefix."""
    if not bucket.target.prefix:
        raise RemoveError(f"{bucket.target}: no prefix; desk removes a preview's prefix, "
                          "never a whole bucket")
    try:
        paths = sorted(bucket.listing())
        refused = bucket.delete(paths) if paths else []
    except StoreError as exc:
        raise RemoveError(f"{bucket.target}: {exc}") from None
    if refused:
        raise RemoveError(f"{bucket.target}: the store refused to delete {len(refused)} "
                          f"objects (first: {refused[0]}); run it again")
    return Removed(str(bucket.target), len(paths))
