"""Where a deploy goes: `s3://BUCKET[/PREFIX]`."""

from __future__ import annotations

import re
from dataclasses import dataclass

# S3's bucket naming rules, loosely: other stores (R2, B2, MinIO) accept the same names.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.\-_]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class Target:
    """A bucket and the key prefix the site lives under ('' or ending in '/')."""

    bucket: str
    prefix: str = ""

    @classmethod
    def parse(cls, url: str) -> Target:
        """Read `s3://BUCKET[/PREFIX]`; ValueError says what is wrong."""
        if not url.startswith("s3://"):
            raise ValueError(f"{url!r} is not an s3://BUCKET[/PREFIX] URL")
        bucket, _, prefix = url[len("s3://"):].partition("/")
        if not _BUCKET.match(bucket):
            raise ValueError(f"{bucket!r} is not a bucket name")
        parts = [p for p in prefix.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise ValueError(f"prefix {prefix!r} may not contain '.' or '..'")
        return cls(bucket, "".join(p + "/" for p in parts))

    def key(self, path: str) -> str:
        """The object key of a site path."""
        return self.prefix + path

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"
