"""Every picture a photo desk sends gets a clear answer: published (each file upright, of
its stated size, not blank where the source is not, with no location or camera data
unless the settings keep it) or refused with one finding naming the file and
`/images/N/url`; never a traceback, never a failed build under `--hold-back`.

Hypothesis makes the pictures: every mode Pillow reads from a photo desk (L, LA, P with
and without transparency, I;16, RGB, RGBA, CMYK, MPO) in JPEG, PNG and WebP, sizes from
1×1 to long panoramas, with and without EXIF orientation and GPS. `make test` runs a few
dozen; `make fuzz` sets DESK_FUZZ_EXAMPLES for a long run.
"""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from conftest import NOW
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import ExifTags, Image, ImageOps
from storygen import REPO, make_story, write_story

from desk.cli import HELD_BACK, main
from desk.content.media import MediaFile, MediaProbe, probe_media
from desk.render.images import crop, crop_paths, jobs, make, original_path

# A quarter of the stories' count (test_hostile): a picture and its eight files cost more.
EXAMPLES = max(10, int(os.environ.get("DESK_FUZZ_EXAMPLES", "200")) // 4)
POINTER = "/images/0/url"
MAKE, MODEL, SERIAL = "FuzzCamMaker", "FuzzModel 9", "FUZZSERIAL42"
CAMERA = tuple(text.encode() for text in (MAKE, MODEL, SERIAL))
# (mode, format) pairs a photo desk sends: what cameras, phones, scanners, charting and
# design tools write.
KINDS = [("L", "JPEG"), ("RGB", "JPEG"), ("CMYK", "JPEG"), ("RGB", "MPO"), ("L", "PNG"),
         ("LA", "PNG"), ("P", "PNG"), ("PA", "PNG"), ("I;16", "PNG"), ("RGB", "PNG"),
         ("RGBA", "PNG"), ("RGB", "WEBP"), ("RGBA", "WEBP")]
# The transposition that EXIF orientation n undoes (what is stored is the upright picture
# turned the other way).
STORED = {1: None, 2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
          4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
          6: Image.Transpose.ROTATE_90, 7: Image.Transpose.TRANSVERSE,
          8: Image.Transpose.ROTATE_270}
# How far a published file may stray from the picture, in mean grey levels, once both are
# made 8 px at most: JPEG and WebP at their qualities, a palette's 256 colours.
TOLERANCE = 40

sizes = st.one_of(
    st.tuples(st.integers(1, 64), st.integers(1, 64)),
    st.tuples(st.integers(1, 1800), st.integers(1, 1800)).filter(lambda s: s[0] * s[1] < 2e6),
    st.tuples(st.integers(2000, 9000), st.integers(1, 120)),  # panoramas, rules
    st.tuples(st.integers(1, 120), st.integers(2000, 9000)),  # tall strips
)


def upright(size: tuple[int, int]) -> Image.Image:
    """The picture as it should be seen: dark left half, light right half, a mid-grey
    top band (so that every turn and flip shows), in colour."""
    width, height = size
    image = Image.new("RGB", size, (235, 225, 40))
    image.paste((20, 30, 90), (0, 0, max(1, width // 2), height))
    image.paste((128, 128, 128), (0, 0, width, max(1, height // 4)) if height > 1 else
                (0, 0, 0, 0))
    return image


ALPHA = ("LA", "RGBA", "PA")


def clear_corner(picture: Image.Image) -> Image.Image:
    """The picture with a transparent corner (bottom left), which shows as white."""
    rgba = picture.convert("RGBA")
    rgba.putpixel((0, picture.height - 1), (0, 0, 0, 0))
    return rgba


def in_mode(image: Image.Image, mode: str) -> Image.Image:
    """The picture in a stored mode."""
    if mode == "I;16":
        return image.convert("L").convert("I").point(lambda v: v * 257).convert("I;16")
    if mode in ("P", "PA"):  # a palette; with a transparent entry from the RGBA picture
        return image.quantize(64)
    return image.convert(mode)


def camera_exif(orientation: int, gps: bool) -> Image.Exif:
    exif = Image.Exif()
    if orientation != 1:
        exif[ExifTags.Base.Orientation] = orientation
    if gps:
        exif[ExifTags.Base.Make] = MAKE
        exif[ExifTags.Base.Model] = MODEL
        exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.BodySerialNumber] = SERIAL
        place = exif.get_ifd(ExifTags.IFD.GPSInfo)
        place[ExifTags.GPS.GPSLatitudeRef] = "S"
        place[ExifTags.GPS.GPSLatitude] = (33.0, 51.0, 54.5)
        place[ExifTags.GPS.GPSLongitudeRef] = "E"
        place[ExifTags.GPS.GPSLongitude] = (151.0, 12.0, 36.0)
    return exif


def stored(picture: Image.Image, mode: str, kind: str, orientation: int, gps: bool) -> bytes:
    """The bytes a photo desk sends: the picture turned as EXIF orientation says it was
    taken, in a mode and format, with its EXIF."""
    method = STORED[orientation]
    taken = in_mode(picture if method is None else picture.transpose(method), mode)
    out = io.BytesIO()
    extra: dict[str, Any] = {"exif": camera_exif(orientation, gps)}
    if kind == "MPO":  # a second picture, as cameras and Ultra HDR add one
        extra |= {"save_all": True, "append_images": [Image.new("RGB", (16, 16), "red")]}
    taken.save(out, kind, **extra)
    return out.getvalue()


def looks(image: Image.Image) -> Image.Image:
    """What a picture looks like, on white, in grey, at most 8 px a side (16-bit grey as
    any viewer shows it)."""
    if image.mode.startswith("I"):
        image = image.convert("I").point(lambda v: v / 257).convert("L")
    flat = image.convert("RGBA")
    white = Image.new("RGBA", flat.size, (255, 255, 255, 255))
    grey = Image.alpha_composite(white, flat).convert("L")
    width, height = grey.size
    scale = 8 / max(width, height)
    return grey.resize((max(1, round(width * scale)), max(1, round(height * scale))),
                       Image.Resampling.BOX)


def distance(a: Image.Image, b: Image.Image) -> float:
    """Mean difference in grey levels between two pictures of one ratio."""
    small_a, small_b = looks(a), looks(b).resize(looks(a).size)
    pairs = zip(small_a.tobytes(), small_b.tobytes(), strict=True)
    return sum(abs(x - y) for x, y in pairs) / (small_a.width * small_a.height)


def published(job_path: str, data: bytes, media: MediaFile, picture: Image.Image) -> None:
    """One published file: of the size the page states, upright, like the picture."""
    with Image.open(io.BytesIO(data)) as made:
        assert getattr(made, "n_frames", 1) == 1, job_path
        shown = ImageOps.exif_transpose(made)
        if job_path == original_path(media):
            assert shown.size == (media.width, media.height)
            like = picture
        elif job_path in crop_paths(media):
            like = crop(picture, shown.size)
        else:
            width = int(job_path.rsplit(".", 2)[-2].removesuffix("w"))
            assert shown.width == width
            assert shown.height == max(1, round(media.height * width / media.width))
            like = picture
        assert distance(shown, like) < TOLERANCE, job_path


def no_camera(data: bytes, job_path: str) -> None:
    assert not any(mark in data for mark in CAMERA), job_path
    with Image.open(io.BytesIO(data)) as made:
        exif = made.getexif()
        assert not exif.get_ifd(ExifTags.IFD.GPSInfo), job_path
        assert ExifTags.Base.Make not in exif and ExifTags.Base.Model not in exif


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(kind=st.sampled_from(KINDS), size=sizes, orientation=st.integers(1, 8),
       gps=st.booleans(), keep=st.booleans(), small_limit=st.booleans())
def test_every_picture_is_published_right_or_refused_with_one_finding(
        kind: tuple[str, str], size: tuple[int, int], orientation: int, gps: bool,
        keep: bool, small_limit: bool) -> None:
    mode, fmt = kind
    picture = clear_corner(upright(size)) if mode in ALPHA else upright(size)
    sent = stored(picture, mode, fmt, orientation, gps)
    max_pixels = 5_000 if small_limit else 60_000_000
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # none may reach the user raw
        content = Path(folder)
        path = f"media/fuzz/picture.{'jpg' if fmt in ('JPEG', 'MPO') else fmt.lower()}"
        (content / path).parent.mkdir(parents=True)
        (content / path).write_bytes(sent)
        found, findings, _ = probe_media([("story.json", POINTER, path)],
                                         MediaProbe(content, 10**9, max_pixels, decode=True))
        if size[0] * size[1] > max_pixels:
            assert [(f.path, f.pointer, f.code) for f in findings] == [
                ("story.json", POINTER, "image-too-large")]
            assert f"content/{path} is " in findings[0].message
            return
        assert findings == [], findings
        media = found[path]
        assert (media.width, media.height) == size  # upright, whatever was stored
        for job in jobs(media, keep):
            (output,) = make(job)
            published(job.path, output.data, media, picture)
            if keep and job.path == original_path(media):
                if fmt != "MPO":
                    assert output.data == sent
                continue
            no_camera(output.data, job.path)


# A photo desk's hostile pictures, one story each: all published or held back.
HOSTILE = {
    "grey16.png": (Image.new("I;16", (40, 30), 30_000), {}),
    "rule.png": (Image.new("RGB", (900, 1), "black"), {}),
    "dot.png": (Image.new("L", (1, 1), 10), {}),
    "strip.png": (Image.new("L", (1, 16_384), 10), {}),  # refused: no WebP holds it
    "cmyk.jpg": (Image.new("CMYK", (300, 200), (0, 80, 160, 0)), {}),
    "camera.jpg": (Image.new("RGB", (640, 480), "navy"),
                   {"exif": camera_exif(6, True), "save_all": True,
                    "append_images": [Image.new("RGB", (8, 8))], "format": "MPO"}),
    "palette.png": (Image.new("RGBA", (50, 50), (9, 9, 9, 0)).quantize(4), {}),
}


def test_a_site_of_hostile_pictures_builds_with_hold_back(tmp_path: Path) -> None:
    content = tmp_path / "content"
    stories = {}
    for n, (name, (image, extra)) in enumerate(sorted(HOSTILE.items()), 1):
        (content / "media").mkdir(parents=True, exist_ok=True)
        image.save(content / "media" / name, **extra)
        stories[name] = write_story(content, make_story(n, images=[
            {"url": f"media/{name}", "alt": name, "credit": "Desk"}]))
    out = tmp_path / "public"
    result = CliRunner().invoke(main, ["build", "--config", str(REPO / "pyproject.toml"),
                                       "--content", str(content), "--out", str(out),
                                       "--now", NOW, "--hold-back", "--no-search"])
    assert result.exit_code == HELD_BACK, result.output
    assert "Traceback" not in result.output and "Warning:" not in result.output
    held = [line for line in result.output.splitlines() if line.startswith("Held back ")]
    assert held == [f"Held back {stories['strip.png']} (new: it appears nowhere until "
                    "fixed):"]
    for n, name in enumerate(sorted(HOSTILE), 1):
        page = out / f"stories/2026-11-14/story-number-{n}/index.html"
        assert page.is_file() == (name != "strip.png"), name
    # Errors only (-q): these small pictures also draw the narrow-lead-picture warning.
    checked = CliRunner().invoke(main, ["check", "-q", "--config", str(REPO / "pyproject.toml"),
                                        "--content", str(content)])
    assert checked.exit_code == 1
    assert [line.split(": ")[0] for line in checked.output.splitlines()
            if "/images/" in line] == [str(stories["strip.png"])]
