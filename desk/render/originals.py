"""The published original of an image: the file's own pixels, without the location (GPS)
and camera data its metadata carries, and a JPEG with more pictures as its first.

News desks protect where a photo was taken: EXIF (GPS position, camera make, model and
serial numbers, lens, dates, the maker's notes), XMP and IPTC blocks are left out, and a
new EXIF block keeps only what shows the picture as meant and credits it (orientation,
artist, copyright). The pixels are never decoded and encoded again: the file's blocks are
copied, its metadata blocks left out (JPEG segments, PNG chunks, WebP chunks), so the
original stays the original, byte for byte in every block kept. A JPEG of the
Multi-Picture Format (many cameras; Android's Ultra HDR, whose second picture is a gain
map) ends after its first picture, the one every browser shows; its index goes too.

`keep_image_metadata` in the settings keeps every block but that index.
"""

from __future__ import annotations

import struct
import warnings
import zlib
from io import BytesIO

from PIL import ExifTags, Image

# What the new EXIF block keeps: how to turn the picture, and whom to credit.
KEPT_TAGS = (ExifTags.Base.Orientation, ExifTags.Base.Artist, ExifTags.Base.Copyright)
# Bump when what is published changes in a way the settings do not show.
VERSION = "1"

_SOI, _EOI, _SOS = 0xD8, 0xD9, 0xDA
_APP0, _APP1, _APP2, _APP14 = 0xE0, 0xE1, 0xE2, 0xEE
_EXIF_HEADER = b"Exif\x00\x00"
# Markers without a length: TEM and the restart markers.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# PNG chunks that carry metadata: EXIF, and text (comments, XMP, raw EXIF and IPTC
# profiles that some tools write as text).
_PNG_METADATA = frozenset({b"eXIf", b"tEXt", b"zTXt", b"iTXt"})
_WEBP_METADATA = frozenset({b"EXIF", b"XMP "})


def published_original(data: bytes, keep: bool) -> bytes:
    """A JPEG, PNG or WebP file's bytes as desk publishes them (ValueError: a file whose
    blocks cannot be read, for the caller to encode again)."""
    kind, exif = _looked_at(data)
    if kind == "MPO" or (kind == "JPEG" and not keep):
        return _jpeg(data, None if keep else _kept_exif(exif))
    if keep:
        return data
    if kind == "PNG":
        return _png(data, _kept_exif(exif))
    if kind == "WEBP":
        return _webp(data, _kept_exif(exif))
    raise ValueError(f"not a format desk publishes: {kind}")


def _looked_at(data: bytes) -> tuple[str, Image.Exif]:
    """A file's format and EXIF data, from its header (nothing decoded)."""
    with warnings.catch_warnings():
        # A corrupt EXIF block was told of when the file was probed; what Pillow could
        # read of it is what is kept.
        warnings.simplefilter("ignore", UserWarning)
        with Image.open(BytesIO(data)) as image:
            return image.format or "", image.getexif()


def _kept_exif(exif: Image.Exif) -> bytes:
    """The TIFF bytes of an EXIF block with only the kept tags (b'' when it has none)."""
    kept = Image.Exif()
    for tag in KEPT_TAGS:
        value = exif.get(tag)
        if value is not None and value != "":
            kept[tag] = value
    if not len(kept):
        return b""
    return kept.tobytes().removeprefix(_EXIF_HEADER)


def _jpeg(data: bytes, exif: bytes | None) -> bytes:
    """A JPEG up to the end of its first picture, its metadata segments left out and
    `exif` (TIFF bytes) in place of its EXIF block (None: every segment kept)."""
    if data[:2] != b"\xff\xd8":
        raise ValueError("no JPEG start of image")
    out = [data[:2]]
    pos = 2
    while pos + 1 < len(data):
        if data[pos] != 0xFF:
            raise ValueError(f"no JPEG marker at byte {pos}")
        marker = data[pos + 1]
        if marker == 0xFF:  # a fill byte before a marker
            pos += 1
            continue
        if marker == _EOI:
            out.append(b"\xff\xd9")
            return b"".join(out)
        if marker in _STANDALONE:
            out.append(data[pos:pos + 2])
            pos += 2
            continue
        (length,) = struct.unpack_from(">H", data, pos + 2)
        end = pos + 2 + length
        if length < 2 or end > len(data):
            raise ValueError(f"a JPEG segment at byte {pos} runs past the file")
        if marker == _SOS:  # its header, then the coded picture up to the next marker
            end = _scan_end(data, end)
            out.append(data[pos:end])
        elif exif is None:
            if not (marker == _APP2 and data[pos + 4:pos + 8] == b"MPF\x00"):
                out.append(data[pos:end])  # all but the index of the other pictures
        elif marker == _APP1 and data[pos + 4:pos + 10] == _EXIF_HEADER:
            if exif:
                out.append(_segment(_APP1, _EXIF_HEADER + exif))
                exif = b""  # one EXIF block
        elif _kept_segment(marker, data[pos + 4:end]):
            out.append(data[pos:end])
        pos = end
    raise ValueError("no JPEG end of image")


def _kept_segment(marker: int, body: bytes) -> bool:
    """True for the segments that show the picture: every one but the application
    segments (APP0-APP15) and comments, and of those the JFIF header, the colour profile
    and Adobe's colour transform."""
    if marker == 0xFE:  # a comment
        return False
    if not _APP0 <= marker <= 0xEF:
        return True
    return ((marker == _APP0 and body.startswith((b"JFIF\x00", b"JFXX\x00")))
            or (marker == _APP2 and body.startswith(b"ICC_PROFILE\x00"))
            or (marker == _APP14 and body.startswith(b"Adobe")))


def _segment(marker: int, body: bytes) -> bytes:
    if len(body) + 2 > 0xFFFF:
        raise ValueError("a JPEG segment too long")
    return bytes((0xFF, marker)) + struct.pack(">H", len(body) + 2) + body


def _scan_end(data: bytes, pos: int) -> int:
    """Where the coded data of a scan starting at `pos` ends: the next marker (0xFF then
    neither 0x00, a stuffed byte, nor a restart marker)."""
    while True:
        pos = data.find(b"\xff", pos)
        if pos < 0 or pos + 1 >= len(data):
            raise ValueError("a JPEG scan runs past the file")
        following = data[pos + 1]
        if following == 0x00 or 0xD0 <= following <= 0xD7:
            pos += 2
        elif following == 0xFF:
            pos += 1
        else:
            return pos


def _png(data: bytes, exif: bytes) -> bytes:
    """A PNG without its metadata chunks, `exif` (TIFF bytes) as its eXIf chunk."""
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError("no PNG signature")
    out = [_PNG_SIGNATURE]
    pos = len(_PNG_SIGNATURE)
    while pos < len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        end = pos + 12 + length
        if end > len(data):
            raise ValueError(f"a PNG chunk at byte {pos} runs past the file")
        if kind == b"eXIf" and exif:
            out.append(_png_chunk(b"eXIf", exif))
            exif = b""
        elif kind not in _PNG_METADATA:
            out.append(data[pos:end])
        pos = end
        if kind == b"IEND":
            return b"".join(out)
    raise ValueError("no PNG end chunk")


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body)))


def _webp(data: bytes, exif: bytes) -> bytes:
    """A WebP without its EXIF and XMP chunks, `exif` (TIFF bytes) as its EXIF chunk."""
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise ValueError("no WebP header")
    chunks: list[tuple[bytes, bytes]] = []
    pos = 12
    while pos + 8 <= len(data):
        kind, length = struct.unpack_from("<4sI", data, pos)
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length:
            raise ValueError(f"a WebP chunk at byte {pos} runs past the file")
        chunks.append((kind, body))
        pos += 8 + length + (length & 1)
    had = [kind for kind, _ in chunks if kind in _WEBP_METADATA]
    if not had:
        return data
    kept = [(kind, body) for kind, body in chunks if kind not in _WEBP_METADATA]
    if kept[0][0] != b"VP8X":
        raise ValueError("WebP metadata without an extended header")
    flags = kept[0][1][0] & ~0x0C  # the EXIF (0x08) and XMP (0x04) flags cleared
    if exif:
        flags |= 0x08
        kept.append((b"EXIF", exif))  # after the picture, as the format says
    kept[0] = (b"VP8X", bytes((flags,)) + kept[0][1][1:])
    body = b"".join(kind + struct.pack("<I", len(chunk)) + chunk + b"\x00" * (len(chunk) & 1)
                    for kind, chunk in kept)
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body
