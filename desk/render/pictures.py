"""What a story's pictures show, on its page and in every format, computed once.

A picture is one of the story's `images`: a remote http(s) URL as written, or a file of the
content repository (desk.content.media), published under content-hashed names with its
resized variants and crops (desk.render.images). Templates only lay these out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from desk import urls
from desk.config import Config
from desk.content.media import MediaFile, is_local
from desk.content.models import Image
from desk.render.images import (
    card_width,
    crop_paths,
    original_path,
    variant_path,
    variant_widths,
)

# What the page asks of the browser: the story column is at most about 46 rem wide.
SIZES = "(min-width: 50rem) 46rem, 100vw"


@dataclass(frozen=True)
class Picture:
    """One image of a story, as every format shows it."""

    src: str  # for the page: root-relative when desk publishes it, else the URL written
    url: str  # absolute, for feeds, Markdown and metadata
    alt: str
    caption: str
    credit: str
    width: int | None
    height: int | None
    type: str  # the MIME type of `url` ('' when not known)
    srcset: str = ""  # WebP variants for the page ('' for a remote image)
    crops: tuple[str, ...] = ()  # absolute URLs of the 16x9, 4x3 and 1x1 crops

    @property
    def sizes(self) -> str:
        """How wide the page shows the picture, for the browser to pick a variant."""
        return SIZES if self.srcset else ""

    @property
    def sized(self) -> bool:
        """True when the page can reserve the picture's box before it loads."""
        return self.width is not None and self.height is not None


def pictures(images: tuple[Image, ...], config: Config,
             media: Mapping[str, MediaFile]) -> tuple[Picture, ...]:
    """The pictures of a story's images, in order (`media`: the content's image files
    probed by this build, by content path)."""
    return tuple(picture(image, config, media) for image in images)


def picture(image: Image, config: Config, media: Mapping[str, MediaFile]) -> Picture:
    """One image as every format shows it."""
    if not is_local(image.url):
        return Picture(image.url, image.url, image.alt, image.caption, image.credit,
                       image.width, image.height, remote_type(image.url))
    found = media[image.url]  # the build refused a story whose file was not probed

    def local(path: str) -> tuple[str, str]:
        return urls.href(config, path), urls.absolute(config, path)

    src, url = local(original_path(found))
    srcset = ", ".join(f"{local(variant_path(found, w))[0]} {w}w"
                       for w in variant_widths(found.width, found.height))
    return Picture(src, url, image.alt, image.caption, image.credit, found.width,
                   found.height, found.mime, srcset,
                   tuple(local(path)[1] for path in crop_paths(found)))


def card_src(images: tuple[str, ...], config: Config, media: Mapping[str, MediaFile]) -> str:
    """What a list card shows of a story's lead image: the small variant of a local file,
    a remote image as it is ('' when the story has none)."""
    if not images:
        return ""
    if not is_local(images[0]):
        return images[0]
    found = media[images[0]]
    return urls.href(config, variant_path(found, card_width(found)))


# Fixed here, not read from the system's table: the output is the same everywhere.
_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png",
          ".webp": "image/webp", ".avif": "image/avif", ".gif": "image/gif"}


def remote_type(url: str) -> str:
    """The MIME type a remote image's URL names by its extension ('' when none)."""
    return _TYPES.get(PurePosixPath(urlsplit(url).path).suffix.lower(), "")
