"""The published files of the content's images: each one's original under a
content-hashed name (without location and camera data, see desk.render.originals), its
resized WebP variants and its three crops, each a unit of its own.

A variant's unit is keyed by the image's bytes and the variant's settings only (not by the
templates or desk's other code), so an hourly build encodes only new or changed images,
and a fresh runner with the build cache restored encodes none it encoded before. The
encoders give the same bytes for the same input and settings; their library versions are
part of each key, so an upgrade encodes again rather than publish other bytes under a
name already cached.
"""

from __future__ import annotations

import hashlib
import io
import struct
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path

import PIL
from PIL import Image, ImageOps, features

from desk import urls
from desk.content.loader import ContentChanged
from desk.content.media import WEBP_MAX_SIDE, BrokenImage, MediaFile
from desk.render import Output
from desk.render.context import RenderContext, Unit, Units
from desk.render.originals import VERSION, published_original

# The widths of the WebP variants a page's srcset offers (never wider than the original).
WIDTHS = (480, 960, 1600)
# Google's article guidance: 16x9, 4x3 and 1x1, high resolution (at least 1,200 px wide
# where the original allows).
CROPS = ((16, 9), (4, 3), (1, 1))
CROP_WIDTH = 1200
# Resizing first by whole factors, then with Lanczos from within twice the size: about a
# third faster than Lanczos from the original, and no difference the eye sees.
REDUCING_GAP = 2.0
WEBP = {"quality": 80, "method": 4}  # method: effort; fixed, as it changes the bytes
JPEG = {"quality": 85, "optimize": True, "progressive": True, "subsampling": 2}
# Bump when the encoding changes in a way the settings above do not show.
ENCODING = f"3 reducing gap {REDUCING_GAP}"
# The variant a list card shows (the smallest standard one), or the widest there is.
CARD_WIDTH = WIDTHS[0]
# A 16-bit grey level as an 8-bit one (65,535 is 255).
_SIXTEEN_TO_EIGHT = 1 / 257
# What one file of an image costs to make, in list pages (about 0.3 s against 3 ms).
UNIT_COST = 100


def encoders() -> str:
    """The versions of everything that shapes an encoded file's bytes."""
    return (f"encoding {ENCODING}; Pillow {PIL.__version__}; webp {features.version('webp')}; "
            f"jpeg {features.version('jpg')}")


def original_path(media: MediaFile) -> str:
    """Where the original's bytes are published."""
    return urls.media_path(media.path, media.digest, media.extension)


def variant_widths(width: int, height: int) -> tuple[int, ...]:
    """The widths of an image's variants: the standard ones up to its own, and its own
    when it is narrower than the widest; none so wide that its height is past what WebP
    holds (an image more than WEBP_MAX_SIDE times as tall as wide is refused when probed)."""
    widest = min(width, max(1, WEBP_MAX_SIDE * width // height))
    widths = [w for w in WIDTHS if w <= widest]
    if widest < WIDTHS[-1] and widest not in widths:
        widths.append(widest)
    return tuple(widths)


def card_width(media: MediaFile) -> int:
    """The width of the variant a list card shows."""
    return min(CARD_WIDTH, max(variant_widths(media.width, media.height)))


def variant_path(media: MediaFile, width: int) -> str:
    """Where an image's WebP variant of this width is published."""
    return urls.media_path(media.path, media.digest, f"{width}w.webp")


def crop_size(media: MediaFile, ratio: tuple[int, int]) -> tuple[int, int]:
    """The size of a crop: the largest box of that ratio inside the image, scaled down to
    CROP_WIDTH when it is wider."""
    across, down = ratio
    width = max(1, min(media.width, media.height * across // down))
    height = max(1, width * down // across)  # a picture one pixel tall has a crop too
    if width > CROP_WIDTH:
        width, height = CROP_WIDTH, CROP_WIDTH * down // across
    return width, height


def crop_paths(media: MediaFile) -> tuple[str, ...]:
    """Where the 16x9, 4x3 and 1x1 crops are published (JPEG: every consumer reads it)."""
    return tuple(urls.media_path(media.path, media.digest, f"{a}x{d}.jpg") for a, d in CROPS)


@dataclass(frozen=True)
class Job:
    """One file to make from an image."""

    media: MediaFile
    path: str
    settings: str  # what, besides the image's bytes, decides the file's bytes
    keep: bool = False  # the original's metadata kept (keep_image_metadata)


def jobs(media: MediaFile, keep: bool = False) -> Iterator[Job]:
    """Every file an image is published as (`keep`: the original with its metadata)."""
    yield Job(media, original_path(media), f"original {VERSION}{' keep' if keep else ''}",
              keep)
    for width in variant_widths(media.width, media.height):
        yield Job(media, variant_path(media, width), f"webp {width} {sorted(WEBP.items())}")
    for ratio, path in zip(CROPS, crop_paths(media), strict=True):
        yield Job(media, path, f"crop {ratio} {crop_size(media, ratio)} {sorted(JPEG.items())}")


def image_units(ctx: RenderContext) -> Units:
    """A unit for every file of every image the shown stories name."""
    made = encoders()
    for media in sorted(ctx.catalog.media.values(), key=lambda m: m.path):
        for job in jobs(media, ctx.config.keep_image_metadata):
            yield Unit(job.path, ("image", media.digest, job.settings, made),
                       partial(make, job), standalone=True, cost=UNIT_COST)


def make(job: Job) -> list[Output]:
    """The file of one job (BrokenImage when the image fails to decode)."""
    media = job.media
    try:
        if job.path == original_path(media):
            return [Output(job.path, _original(job))]
        return [Output(job.path, _made(job, _upright(media.source, media.digest)))]
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise BrokenImage(media, str(exc)) from exc


def _original(job: Job) -> bytes:
    """The original's bytes as published: its own blocks without its metadata; encoded
    again, upright and without any, when its blocks cannot be read apart."""
    media = job.media
    data = _read(media)
    try:
        return published_original(data, job.keep)
    except (ValueError, struct.error):
        image = _upright(media.source, media.digest)
        if media.format == "PNG":
            out = io.BytesIO()
            image.save(out, "PNG", **({"icc_profile": image.info["icc_profile"]}
                                      if "icc_profile" in image.info else {}))
            return out.getvalue()
        return encode(image, media.format)


def _made(job: Job, image: Image.Image) -> bytes:
    media = job.media
    if job.settings.startswith("webp"):
        width = int(job.settings.split()[1])
        height = max(1, round(media.height * width / media.width))
        return encode(image.resize((width, height), Image.Resampling.LANCZOS,
                                   reducing_gap=REDUCING_GAP), "WEBP")
    index = crop_paths(media).index(job.path)
    return encode(crop(image, crop_size(media, CROPS[index])), "JPEG")


def crop(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """The centre of an image at the ratio of `size`, scaled to it."""
    width, height = image.size
    across, down = size
    if width * down > height * across:  # wider than the ratio: cut the sides
        kept = height * across / down
        box = ((width - kept) / 2, 0.0, (width + kept) / 2, float(height))
    else:  # taller: cut top and bottom
        kept = width * down / across
        box = (0.0, (height - kept) / 2, float(width), (height + kept) / 2)
    return image.resize(size, Image.Resampling.LANCZOS, box=box, reducing_gap=REDUCING_GAP)


def encode(image: Image.Image, kind: str) -> bytes:
    """An image's bytes in a format, without its metadata (no EXIF: no camera, no place),
    its colour profile kept."""
    out = io.BytesIO()
    profile = image.info.get("icc_profile")
    extra = {"icc_profile": profile} if profile else {}
    if kind == "JPEG":
        flat = image
        if image.mode == "RGBA":  # JPEG has no transparency: on white
            flat = Image.new("RGB", image.size, (255, 255, 255))
            flat.paste(image, mask=image.getchannel("A"))
        flat.save(out, "JPEG", **JPEG, **extra)
    else:
        converted = image if image.mode in ("RGB", "RGBA") else image.convert("RGB")
        converted.save(out, "WEBP", **WEBP, **extra)
    return out.getvalue()


def _read(media: MediaFile) -> bytes:
    """An image file's bytes, when they are still the ones this build probed."""
    return _read_checked(media.source, media.digest)


# One decoded image (about 18 MB for 3,000 x 2,000) kept in a process while the units of
# its files are made one after another; the digest tells versions of one file apart.
@lru_cache(maxsize=1)
def _upright(source: Path, digest: str) -> Image.Image:
    """An image decoded and turned upright, with no metadata but its colour profile."""
    with warnings.catch_warnings():
        # Pillow's warnings of the file (a corrupt EXIF block) were told when it was probed.
        warnings.simplefilter("ignore", UserWarning)
        with Image.open(io.BytesIO(_read_checked(source, digest))) as image:
            image.load()  # an MPO's first picture
            return _plain(ImageOps.exif_transpose(image), image.info.get("icc_profile"))


def _plain(upright: Image.Image, profile: bytes | None) -> Image.Image:
    """An upright image in a mode the encoders take (RGB, RGBA or L), with no metadata but
    its colour profile."""
    if upright.mode.startswith("I"):  # 16-bit grey (scanners, charts): scaled, not cut
        upright = upright.convert("I").point(lambda v: v * _SIXTEEN_TO_EIGHT).convert("L")
    if upright.mode not in ("RGB", "RGBA", "L"):  # palette, CMYK...
        # A palette's transparency lives in its info, which is dropped below.
        alpha = "A" in upright.getbands() or "transparency" in upright.info
        upright = upright.convert("RGBA" if alpha else "RGB")
    upright.info = {"icc_profile": profile} if profile else {}
    return upright


def _read_checked(source: Path, digest: str) -> bytes:
    """A file's bytes, when they are still those of this digest."""
    data = source.read_bytes()
    if hashlib.sha256(data).hexdigest() != digest:
        raise ContentChanged(str(source))
    return data
