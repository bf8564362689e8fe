"""The image files of the content repository that stories name: found, measured and
checked once per version of their bytes.

A story names a file below `content/media/` by its path there (`media/2026-11-14/rack.jpg`,
see desk.content.models). Each such file is read and hashed, and opened with Pillow: its
header tells its format and size, refused past the settings' limits before anything is
decoded, and then decoded whole (a truncated file decodes only partly), so `desk check` and
a build refuse the same files. What that told is remembered by the build cache
(MediaRecord): a file whose stat is the same next time, or that git holds unchanged with
the same blob (a fresh checkout), is not read again (`desk check` reads every file). A
file that fails when its variants are made (changed since) stops the build with the same
finding (BrokenImage). Nothing here raises on a bad file: each problem becomes a finding
at the image's pointer in the story that names it, and EXIF data Pillow finds corrupt a
warning.

A JPEG that carries more pictures (the Multi-Picture Format of many cameras' JPEGs, and
of Android's Ultra HDR) is published as the JPEG every browser shows: its first.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import ExifTags, Image, UnidentifiedImageError

from desk.config import Config
from desk.content.checks import LEAD_MIN_WIDTH, narrow_lead
from desk.content.findings import Finding
from desk.content.gitblobs import blob_id
from desk.content.loader import LoadedStory
from desk.content.models import MEDIA_FOLDER, is_local

__all__ = ["BrokenImage", "MediaFile", "MediaProbe", "is_local", "local_refs", "probe_media"]

# The formats desk publishes as they are (the fallback of a page's <picture>), by
# Pillow's name: (MIME type, file extension).
FORMATS = {"JPEG": ("image/jpeg", "jpg"), "PNG": ("image/png", "png"),
           "WEBP": ("image/webp", "webp")}
# Formats published as another: an MPO's first picture is a JPEG.
AS_FORMAT = {"MPO": "JPEG"}
# WebP holds at most this many pixels a side: an image must have a variant of at least
# one pixel's width whose height fits (see desk.render.images.variant_widths).
WEBP_MAX_SIDE = 16383

IMAGE_MISSING = "image-missing"
IMAGE_INVALID = "image-invalid"
IMAGE_TOO_LARGE = "image-too-large"
IMAGE_OUTSIDE = "image-outside"
IMAGE_EXIF = "image-exif"
IMAGE_WARNING = "image-warning"


@dataclass(frozen=True, slots=True)
class MediaFile:
    """One image file as desk publishes it: its content path, the sha256 of its bytes,
    its size once turned upright (EXIF orientation applied), and its format."""

    path: str  # below the content folder, e.g. media/2026-11-14/rack.jpg
    source: Path  # where its bytes are read from
    digest: str
    width: int
    height: int
    format: str  # Pillow's name: JPEG, PNG or WEBP
    named_by: tuple[str, str] = ("", "")  # the first story file naming it, and the pointer

    @property
    def mime(self) -> str:
        """Its MIME type."""
        return FORMATS[self.format][0]

    @property
    def extension(self) -> str:
        """The extension it is published with."""
        return FORMATS[self.format][1]


class BrokenImage(Exception):
    """An image file that passed its probe failed to decode while its variants were made."""

    def __init__(self, media: MediaFile, problem: str) -> None:
        story, pointer = media.named_by
        self.finding = Finding(story, pointer, IMAGE_INVALID,
                               f"content/{media.path} cannot be decoded: {problem}")
        super().__init__(self.finding.format())


# What a build remembers of an image file it probed, for the next one: its stat (mtime in
# ns, size, inode), its git blob id, the sha256 of its bytes, its size and its format.
MediaRecord = tuple[int, int, int, str, str, int, int, str]


@dataclass(frozen=True)
class MediaProbe:
    """How image files are read: where the content is, the settings' limits, whether to
    read each again whatever the records say (`decode`: desk check), the last build's
    records by content path (a file whose stat is the same, or that git holds unchanged
    with the same blob, is not read again), and git's clean files (`clean()`: by path, as
    the content folder joins it)."""

    content_dir: Path
    max_bytes: int
    max_pixels: int
    decode: bool = False
    known: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    clean: Callable[[], Mapping[str, str]] = dict


LEAD_POINTER = "/images/0/url"  # a story's lead picture


def local_refs(stories: Iterable[LoadedStory]) -> Iterator[tuple[str, str, str]]:
    """(story file, JSON pointer, content path) of every local image of these stories."""
    for item in stories:
        for i, url in enumerate(item.summary.images):
            if is_local(url):
                yield item.path, f"/images/{i}/url", url


def probe_media(refs: Iterable[tuple[str, str, str]], probe: MediaProbe
                ) -> tuple[dict[str, MediaFile], list[Finding], dict[str, MediaRecord]]:
    """The image files that stories name, by content path; a finding for each reference
    to a file that cannot be published (`refs`: (story file, JSON pointer, content path)
    of every local image of every story shown); and the records of the files probed."""
    found: dict[str, tuple[MediaFile, MediaRecord] | str] = {}
    findings: list[Finding] = []
    for story_path, pointer, path in refs:
        if path not in found:
            with warnings.catch_warnings(record=True) as told:
                # Pillow's warnings about a file's EXIF data (corrupt, truncated): one
                # finding naming the file, not Python's warning naming Pillow's source.
                warnings.simplefilter("always", UserWarning)
                found[path] = _probe(path, probe, (story_path, pointer))
            if told and not isinstance(found[path], str):
                findings.append(_warned(f"content/{path}", str(told[0].message),
                                        story_path, pointer))
        result = found[path]
        if isinstance(result, str):
            code, _, message = result.partition(" ")
            findings.append(Finding(story_path, pointer, code, message))
    probed = {p: f for p, f in found.items() if not isinstance(f, str)}
    return ({p: f[0] for p, f in probed.items()}, findings,
            {p: f[1] for p, f in probed.items()})


def _warned(shown: str, message: str, story_path: str, pointer: str) -> Finding:
    """The warning a file's probe gave, as a finding naming the file."""
    if "exif" in message.lower():
        return Finding(story_path, pointer, IMAGE_EXIF, (
            f"{shown} has EXIF data Pillow cannot read ({message.strip()}): what it reads "
            "of it turns the picture, and none of it is published but the orientation"),
            "warning")
    return Finding(story_path, pointer, IMAGE_WARNING, f"{shown}: {message.strip()}",
                   "warning")


def media_findings(stories: Iterable[LoadedStory], config: Config) -> list[Finding]:
    """What `desk check` finds of the image files these stories name: each decoded whole."""
    probe = MediaProbe(config.content_dir, config.image_max_bytes, config.image_max_pixels,
                       decode=True)
    refs = list(local_refs(stories))
    files, findings, _ = probe_media(refs, probe)
    for story_path, pointer, path in refs:
        found = files.get(path)
        if pointer == LEAD_POINTER and found is not None and found.width < LEAD_MIN_WIDTH:
            narrow = narrow_lead(found.width)
            findings.append(Finding(story_path, narrow.pointer, narrow.code, narrow.message,
                                    narrow.severity))
    return findings


def record_of(record: Sequence[Any]) -> MediaRecord | None:
    """A record as saved (JSON), checked (None: not one this code wrote)."""
    if (len(record) == 8 and all(type(v) is int for v in (*record[:3], *record[5:7]))
            and all(type(v) is str for v in (record[3], record[4], record[7]))
            and record[7] in FORMATS):
        return (record[0], record[1], record[2], record[3], record[4], record[5], record[6],
                record[7])
    return None


def _probe(path: str, probe: MediaProbe, named_by: tuple[str, str]
           ) -> tuple[MediaFile, MediaRecord] | str:
    """The file at a content path and its record, or "CODE message" saying why it cannot
    be published."""
    shown = f"content/{path}"  # how an editor knows the file, whatever --content says
    media = (probe.content_dir / MEDIA_FOLDER).resolve()
    source = probe.content_dir / path
    try:
        real = source.resolve(strict=True)
    except FileNotFoundError:
        return f"{IMAGE_MISSING} {shown} does not exist"
    except (OSError, RuntimeError) as exc:  # a loop of links, a folder we may not read
        return f"{IMAGE_MISSING} {shown} cannot be read: {exc}"
    if not real.is_relative_to(media):
        return f"{IMAGE_OUTSIDE} {shown} leads outside content/{MEDIA_FOLDER}/"
    try:
        stat = os.stat(real)
        if not real.is_file():
            return f"{IMAGE_MISSING} {shown} is not a file"
        if stat.st_size > probe.max_bytes:
            return (f"{IMAGE_TOO_LARGE} {shown} is {stat.st_size:,} bytes; at most "
                    f"{probe.max_bytes:,} (image_max_bytes)")
        record = _known(path, source, stat, probe) or _read(real, shown, stat, probe)
    except OSError as exc:
        return f"{IMAGE_MISSING} {shown} cannot be read: {exc.strerror or exc}"
    if isinstance(record, str):
        return record
    return MediaFile(path, real, record[4], record[5], record[6], record[7], named_by), record


def _known(path: str, source: Path, stat: os.stat_result, probe: MediaProbe
           ) -> MediaRecord | None:
    """The last build's record of a file, when its stat is the same, or git holds it
    unchanged with the bytes the record was made from (a fresh checkout: new stats)."""
    if probe.decode or path not in probe.known:
        return None
    old = record_of(probe.known[path])
    if old is None or old[1] != stat.st_size:
        return None
    now = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
    if old[5] * old[6] > probe.max_pixels:  # a limit lowered since: read it again
        return None
    if old[:3] == now or probe.clean().get(str(source)) == old[3]:
        return (*now, *old[3:])
    return None


def _read(real: Path, shown: str, stat: os.stat_result, probe: MediaProbe
          ) -> MediaRecord | str:
    """A file read, hashed and measured: its record, or "CODE message"."""
    data = real.read_bytes()
    told = _measure(io.BytesIO(data), shown, probe)
    if isinstance(told, str):
        return told
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino, blob_id(data),
            hashlib.sha256(data).hexdigest(), *told)


def _measure(source: io.BytesIO, shown: str, probe: MediaProbe
             ) -> tuple[int, int, str] | str:
    """An image's upright size and the format it is published in (decoded whole); or
    "CODE message"."""
    max_pixels = probe.max_pixels
    try:
        with warnings.catch_warnings():
            # The settings' limit is checked below, from the header; Pillow's own
            # warning (past 89 million pixels) would only repeat it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(source) as image:
                kind = image.format or ""
                kind = AS_FORMAT.get(kind, kind)
                width, height = image.size  # from the header: nothing decoded yet
                if width * height > max_pixels:
                    return (f"{IMAGE_TOO_LARGE} {shown} is {width:,} × {height:,} pixels; at "
                            f"most {max_pixels:,} pixels in all (image_max_pixels)")
                if kind not in FORMATS:
                    return (f"{IMAGE_INVALID} {shown} is a {kind} image; desk publishes "
                            f"{', '.join(FORMATS)}")
                image.load()  # a truncated or corrupt file fails here
                if _turned(image):
                    width, height = height, width
                if height > WEBP_MAX_SIDE * width:
                    return (f"{IMAGE_TOO_LARGE} {shown} is {width:,} × {height:,} pixels (as "
                            f"shown): at most {WEBP_MAX_SIDE:,} times as tall as wide, or "
                            "its narrowest web variant (WebP) cannot hold it")
    except Image.DecompressionBombError:
        # Pillow refuses to open one past twice its own limit, before telling its size.
        return (f"{IMAGE_TOO_LARGE} {shown} is over {2 * (Image.MAX_IMAGE_PIXELS or 0):,} "
                f"pixels; at most {max_pixels:,} pixels in all (image_max_pixels)")
    except UnidentifiedImageError:
        return f"{IMAGE_INVALID} {shown} is not an image desk can read"
    except (OSError, ValueError, SyntaxError) as exc:
        return f"{IMAGE_INVALID} {shown} cannot be decoded: {exc}"
    return width, height, kind


def _turned(image: Image.Image) -> bool:
    """True when the image's EXIF orientation turns it a quarter (width and height swap)."""
    return image.getexif().get(ExifTags.Base.Orientation, 1) in (5, 6, 7, 8)
