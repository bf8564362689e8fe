"""The bucket, through boto3: list, read and write objects, delete in batches.

Credentials and region come from boto3's usual chain (AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, a role on the runner).
"""

from __future__ import annotations

import base64
import hashlib
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config as BotoConfig
from botocore.exceptions import BotoCoreError, ClientError

from desk.deploy.headers import Headers
from desk.deploy.plan import MANIFEST, Remote
from desk.deploy.target import Target

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

# What DeleteObjects takes at most in one request.
_DELETE_BATCH = 1000

StoreError = (BotoCoreError, ClientError)


def make_client(endpoint_url: str | None, connections: int) -> S3Client:
    """An S3 client for AWS or, with endpoint_url, any S3-compatible store."""
    config = BotoConfig(
        max_pool_connections=connections,
        retries={"mode": "standard"},  # attempts: AWS_MAX_ATTEMPTS or the profile's
        # Other stores than AWS reject the newer default checksums; desk sends Content-MD5.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    client: S3Client = boto3.session.Session().client("s3", endpoint_url=endpoint_url,
                                                      config=config)
    return client


class Bucket:
    """The objects below one target's prefix, by site path."""

    def __init__(self, client: S3Client, target: Target) -> None:
        self.client = client
        self.target = target

    def listing(self) -> dict[str, Remote]:
        """Every object below the prefix: site path → size and ETag."""
        found: dict[str, Remote] = {}
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.target.bucket, Prefix=self.target.prefix)
        for page in pages:
            for item in page.get("Contents", []):
                path = item["Key"][len(self.target.prefix):]
                found[path] = Remote(item.get("Size", 0), _etag(item.get("ETag", "")))
        return found

    def read(self, path: str) -> bytes:
        """An object's bytes."""
        answer = self.client.get_object(Bucket=self.target.bucket, Key=self.target.key(path))
        data: bytes = answer["Body"].read()
        return data

    def put(self, path: str, data: bytes, headers: Headers) -> str:
        """Write one object; its ETag as the store answered."""
        answer = self.client.put_object(
            Bucket=self.target.bucket, Key=self.target.key(path), Body=data,
            ContentType=headers.content_type, CacheControl=headers.cache_control,
            ContentMD5=base64.b64encode(hashlib.md5(data).digest()).decode("ascii"))
        return _etag(answer.get("ETag", ""))

    def delete(self, paths: list[str]) -> list[str]:
        """Delete objects; the paths the store refused to delete."""
        refused: list[str] = []
        for start in range(0, len(paths), _DELETE_BATCH):
            batch = paths[start:start + _DELETE_BATCH]
            answer = self.client.delete_objects(Bucket=self.target.bucket, Delete={
                "Objects": [{"Key": self.target.key(p)} for p in batch], "Quiet": True})
            refused += [e.get("Key", "")[len(self.target.prefix):]
                        for e in answer.get("Errors", [])]
        return refused

    def write_manifest(self, data: bytes) -> None:
        """The manifest, written last: it describes a complete deploy."""
        self.put(MANIFEST, data, Headers("application/gzip", "no-store"))

    def read_manifest(self, listing: dict[str, Remote]) -> bytes | None:
        """The manifest's bytes, when the listing has one."""
        return self.read(MANIFEST) if MANIFEST in listing else None


def _etag(value: Any) -> str:
    """An ETag without its quotes (some stores list them bare)."""
    return str(value).strip('"').lower()
