"""A story's pictures on its page and in every format: credited, sized, responsive, and
published from the content's own files as variants and crops (desk.render.images)."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import commonmark
import feedparser
import lxml.html
import marko
import mistune
import pytest
from click.testing import CliRunner
from conftest import NOW, tree
from picturegen import REMOTE, photo, pictured_story
from PIL import ExifTags, Image, ImageOps
from storygen import REPO, make_story, write_story

from desk.cli import main
from desk.content.models import Story

PAGE = "stories/2026-11-14/story-number-1/"
REMOTE_ONLY = "stories/2026-11-14/story-number-3/"


def build(content: Path, out: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["build", "--config", str(REPO / "pyproject.toml"),
                                     "--content", str(content), "--out", str(out), "--now", NOW,
                                     *extra])


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A site with a story of two local pictures and a remote one, a story with a remote
    picture only, and one with none: (content, output)."""
    root = tmp_path_factory.mktemp("pictures")
    content = root / "content"
    write_story(content, pictured_story(1, content))
    write_story(content, make_story(2))
    write_story(content, make_story(3, images=[REMOTE]))
    out = root / "public"
    result = build(content, out, "--cache-dir", str(root / "cache"))
    assert result.exit_code == 0, result.output
    return content, out


def page(out: Path, path: str = PAGE) -> Any:
    return lxml.html.fromstring((out / path / "index.html").read_bytes())


def local(out: Path, href: str) -> Path:
    assert href.startswith("/media/"), href
    return out / href.lstrip("/")


def test_page_shows_every_picture_with_caption_and_labelled_credit(site) -> None:
    _, out = site
    figures = page(out).cssselect("article figure.picture")
    assert len(figures) == 3
    alts = [f.cssselect("img")[0].get("alt") for f in figures]
    assert alts == ["GPU racks [row 1] *lit* in blue", "Tokens per minute, by host",
                    REMOTE["alt"]]
    captions = [f.cssselect("figcaption")[0].text_content() for f in figures]
    assert captions == ["Racks at the test site. Credit: Jane Roe / Example Agency",
                        "Throughput under load Credit: Hanging Context",
                        f"{REMOTE['caption']} Credit: {REMOTE['credit']}"]
    assert all(f.cssselect(".credit")[0].text_content().startswith("Credit: ") for f in figures)


def test_lead_is_sized_and_first_the_others_lazy(site) -> None:
    _, out = site
    doc = page(out)
    lead, *others = doc.cssselect("article figure.picture img")
    # The lead stands above the body, under the headline.
    assert doc.cssselect("article > figure.lead-picture img") == [lead]
    assert (lead.get("width"), lead.get("height")) == ("3000", "2000")
    assert lead.get("fetchpriority") == "high" and lead.get("loading") is None
    for img in others:
        assert (img.get("loading"), img.get("decoding")) == ("lazy", "async")
        assert img.get("width") and img.get("height")
    assert (others[1].get("width"), others[1].get("height")) == ("1200", "800")


def test_srcset_variants_exist_at_the_widths_named(site) -> None:
    _, out = site
    sources = page(out).cssselect("article figure.picture source")
    assert [s.get("type") for s in sources] == ["image/webp", "image/webp"]
    named = [[c.strip().split() for c in s.get("srcset").split(",")] for s in sources]
    assert [[w for _, w in candidates] for candidates in named] == [
        ["480w", "960w", "1600w"], ["480w", "900w"]]  # never wider than the original
    for candidates in named:
        for href, width in candidates:
            with Image.open(local(out, href)) as image:
                assert image.format == "WEBP"
                assert image.width == int(width[:-1])
    # The fallback is the original, under a content-hashed name, in its own format.
    imgs = page(out).cssselect("article figure.picture picture img")
    assert re.fullmatch(r"/media/lead-1\.[0-9a-f]{12}\.jpg", imgs[0].get("src"))
    assert re.fullmatch(r"/media/chart-1\.[0-9a-f]{12}\.png", imgs[1].get("src"))
    original = photo(out.parent / "again.jpg", (3000, 2000), shade=1)
    assert local(out, imgs[0].get("src")).read_bytes() == original.read_bytes()


def test_crops_have_googles_ratios_and_feed_json_ld_and_open_graph(site) -> None:
    _, out = site
    doc = page(out)
    article = json.loads(doc.cssselect('script[type="application/ld+json"]')[0].text)
    crops = article["image"]
    assert len(crops) == 3
    for url, (across, down) in zip(crops, [(16, 9), (4, 3), (1, 1)], strict=True):
        assert url.startswith("https://hangingcontext.com/media/lead-1.")
        with Image.open(out / url.removeprefix("https://hangingcontext.com/")) as image:
            assert image.width >= 1200 or image.height == 2000
            assert abs(image.width / image.height - across / down) < 0.01
            assert not image.getexif()
    og = doc.cssselect('meta[property="og:image"]')[0].get("content")
    assert og == crops[0]
    # A remote lead is given as written.
    remote = json.loads(page(out, REMOTE_ONLY).cssselect(
        'script[type="application/ld+json"]')[0].text)
    assert remote["image"] == [REMOTE["url"]]


def test_feeds_carry_each_entry_s_picture(site) -> None:
    _, out = site
    rss = feedparser.parse((out / "feed.xml").read_bytes())
    atom = feedparser.parse((out / "atom.xml").read_bytes())
    assert not rss.bozo and not atom.bozo
    by_title = {e.title: e for e in rss.entries}
    one = by_title["Headline of story 1"]
    assert [m["url"] for m in one.media_content][2] == REMOTE["url"]
    assert one.media_content[0]["url"].startswith("https://hangingcontext.com/media/lead-1.")
    assert one.media_content[0]["type"] == "image/jpeg"
    assert one.media_credit[0]["content"] == "Jane Roe / Example Agency"
    assert [m["url"] for m in by_title["Headline of story 3"].media_content] == [REMOTE["url"]]
    assert "media_content" not in by_title["Headline of story 2"]
    atom_by_title = {e.title: e for e in atom.entries}
    assert [e.href for e in atom_by_title["Headline of story 3"].enclosures] == [REMOTE["url"]]
    assert [e.type for e in atom_by_title["Headline of story 1"].enclosures] == [
        "image/jpeg", "image/png", "image/jpeg"]
    assert atom_by_title["Headline of story 2"].enclosures == []
    # Each feed's HTML shows the lead with its credit.
    assert "Credit: Jane Roe / Example Agency" in one.content[0].value
    items = {i["title"]: i for i in json.loads((out / "feed.json").read_bytes())["items"]}
    assert items["Headline of story 1"]["image"] == one.media_content[0]["url"]
    assert items["Headline of story 3"]["image"] == REMOTE["url"]
    assert "image" not in items["Headline of story 2"]
    assert items["Headline of story 1"]["_desk"]["images"][0]["credit"] == \
        "Jane Roe / Example Agency"


_mistune = mistune.create_markdown(escape=False)
PARSERS = {"mistune": lambda text: str(_mistune(text)), "commonmark": commonmark.commonmark,
           "marko": marko.convert}


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_index_md_image_has_the_exact_alt_and_the_credit(site, parser: str) -> None:
    _, out = site
    html = lxml.html.fromstring(PARSERS[parser]((out / PAGE / "index.md").read_text()))
    images = html.cssselect("img")
    assert [i.get("alt") for i in images] == ["GPU racks [row 1] *lit* in blue",
                                              "Tokens per minute, by host", REMOTE["alt"]]
    assert images[0].get("src").startswith("https://hangingcontext.com/media/lead-1.")
    assert images[2].get("src") == REMOTE["url"]
    text = html.text_content()
    assert "Racks at the test site. Credit: Jane Roe / Example Agency" in text


def test_cards_show_the_lead_s_small_variant_lazily(site) -> None:
    _, out = site
    cards = {c.cssselect(".card-title a")[0].text_content(): c
             for c in lxml.html.fromstring((out / "index.html").read_bytes()).cssselect(".card")}
    img = cards["Headline of story 1"].cssselect("img.card-picture")[0]
    assert re.fullmatch(r"/media/lead-1\.[0-9a-f]{12}\.480w\.webp", img.get("src"))
    assert (img.get("loading"), img.get("width"), img.get("height")) == ("lazy", "480", "270")
    assert cards["Headline of story 3"].cssselect("img")[0].get("src") == REMOTE["url"]
    assert cards["Headline of story 2"].cssselect("img") == []


def test_index_json_round_trips_the_images_as_written(site) -> None:
    content, out = site
    written = json.loads((content / "stories/2026-11-14/story-number-1.json").read_text())
    built = json.loads((out / PAGE / "index.json").read_text())
    assert built["images"] == written["images"]
    assert Story.model_validate(built).images == Story.model_validate(written).images


def test_links_check_follows_srcset(site, tmp_path: Path) -> None:
    _, out = site
    result = CliRunner().invoke(main, ["check", "--config", str(REPO / "pyproject.toml"),
                                       "--links", str(out)])
    assert result.exit_code == 0, result.output
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    victim = next(broken.glob("media/lead-1.*.960w.webp"))
    victim.unlink()
    result = CliRunner().invoke(main, ["check", "--config", str(REPO / "pyproject.toml"),
                                       "--links", str(broken)])
    assert result.exit_code == 1
    assert f"/media/{victim.name}: no such file in the output" in result.output


def test_check_warns_of_missing_alt_and_credit(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(1, images=[{"url": REMOTE["url"]}]))
    result = CliRunner().invoke(main, ["check", "--config", str(REPO / "pyproject.toml"),
                                       "--content", str(content)])
    assert result.exit_code == 0, result.output
    assert "/images/0/alt: [image-alt-missing] has no alt text" in result.output
    assert "/images/0/credit: [image-credit-missing] has no credit" in result.output


def test_same_image_same_bytes_in_another_process(site, tmp_path: Path) -> None:
    """The encoders are deterministic: another process, with nothing decoded kept, makes
    the same bytes of the same image."""
    content, out = site
    again = tmp_path / "again"
    done = subprocess.run([sys.executable, "-m", "desk", "build", "--config",
                           str(REPO / "pyproject.toml"), "--content", str(content), "--out",
                           str(again), "--now", NOW, "--no-cache", "--jobs", "2"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert tree(again / "media") == tree(out / "media")
    assert len(tree(out / "media")) == 2 * 1 + 3 + 2 + 2 * 3  # originals, variants, crops


def _png_header(width: int, height: int) -> bytes:
    """The first bytes of a PNG that says it is width x height (and holds no pixels)."""
    import struct
    import zlib
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)))


def _truncated_jpeg(path: Path) -> None:
    whole = photo(path, (1600, 1200)).read_bytes()
    path.write_bytes(whole[: len(whole) // 2])


BROKEN = {
    "missing": (None, "image-missing", "content/media/2026-11-14/x.jpg does not exist"),
    "text": (lambda p: p.write_text("not a picture\n"), "image-invalid",
             "content/media/2026-11-14/x.jpg is not an image desk can read"),
    "truncated": (_truncated_jpeg, "image-invalid",
                  "content/media/2026-11-14/x.jpg cannot be decoded: "),
    "huge": (lambda p: p.write_bytes(_png_header(20_000, 20_000)), "image-too-large",
             "content/media/2026-11-14/x.jpg is over 178,956,970 pixels; at most 60,000,000 "
             "pixels in all (image_max_pixels)"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_image_is_one_clear_finding_and_changes_nothing(case: str,
                                                                 tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(2))
    out = tmp_path / "public"
    assert build(content, out).exit_code == 0
    before = tree(out)
    make, code, message = BROKEN[case]
    story = write_story(content, make_story(1, images=[
        {"url": "media/2026-11-14/x.jpg", "alt": "x", "credit": "y"}]))
    if make is not None:
        target = content / "media/2026-11-14/x.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        make(target)
    result = build(content, out)
    assert result.exit_code == 1
    problems = [line for line in result.output.splitlines() if "/images/" in line]
    assert len(problems) == 1, result.output
    assert problems[0].startswith(f"{story}: /images/0/url: {message}"), problems
    assert "Traceback" not in result.output
    assert tree(out) == before
    # desk check says the same, the truncated file included (it decodes every image).
    checked = CliRunner().invoke(main, ["check", "--config", str(REPO / "pyproject.toml"),
                                        "--content", str(content)])
    assert checked.exit_code == 1
    assert f"{story}: /images/0/url: [{code}] {message}" in checked.output


@pytest.mark.parametrize("url", ["../secret.jpg", "/etc/passwd", "media/../../x.jpg",
                                 "media/.hidden.jpg", "file:///etc/passwd", "stories/x.jpg"])
def test_an_image_outside_content_media_is_refused(url: str, tmp_path: Path) -> None:
    content = tmp_path / "content"
    story = write_story(content, make_story(1, images=[{"url": url, "alt": "x", "credit": "y"}]))
    result = build(content, tmp_path / "public")
    assert result.exit_code == 1
    problems = [line for line in result.output.splitlines() if "/images/" in line]
    assert len(problems) == 1 and problems[0].startswith(f"{story}: /images/0/url: "), problems
    assert not (tmp_path / "public").exists()


def test_a_link_out_of_content_media_is_refused(tmp_path: Path) -> None:
    content = tmp_path / "content"
    secret = photo(tmp_path / "elsewhere.jpg", (800, 600))
    (content / "media").mkdir(parents=True)
    (content / "media/link.jpg").symlink_to(secret)
    story = write_story(content, make_story(1, images=[
        {"url": "media/link.jpg", "alt": "x", "credit": "y"}]))
    result = build(content, tmp_path / "public")
    assert result.exit_code == 1
    assert f"{story}: /images/0/url: content/media/link.jpg leads outside content/media/" \
        in result.output


def test_the_size_limit_is_a_setting(tmp_path: Path) -> None:
    content = tmp_path / "content"
    photo(content / "media/big.jpg", (1000, 800))
    story = write_story(content, make_story(1, images=[
        {"url": "media/big.jpg", "alt": "x", "credit": "y"}]))
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example"\nimage_max_pixels = 500000\n')
    result = CliRunner().invoke(main, ["build", "--config", str(settings), "--content",
                                       str(content), "--out", str(tmp_path / "public"),
                                       "--now", NOW])
    assert result.exit_code == 1
    assert (f"{story}: /images/0/url: content/media/big.jpg is 1,000 × 800 pixels; at most "
            "500,000 pixels in all (image_max_pixels)") in result.output


def _media_files(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "media").glob("*")) if (folder / "media").is_dir() \
        else []


def test_a_fresh_runner_encodes_only_the_new_image(tmp_path: Path) -> None:
    content, cache = tmp_path / "content", tmp_path / "cache"
    for n in (1, 2):
        write_story(content, pictured_story(n, content))
    out, first = tmp_path / "public", tmp_path / "first"
    assert build(content, out, "--cache-dir", str(cache)).exit_code == 0
    assert len(_media_files(out)) == 2 * 13
    # A new runner: no site, a new checkout (new stats everywhere), the cache restored;
    # one image replaced.
    out.rename(first)
    for leftover in tmp_path.glob(".public.desk-*"):
        # The spare and staging folders, and (once the build takes a lock) its lock file.
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    checkout = tmp_path / "checkout"
    shutil.copytree(content, checkout)
    shutil.rmtree(content)
    checkout.rename(content)
    photo(content / "media/2026-11-14/lead-2.jpg", (3000, 2000), shade=99)
    changes = out
    result = build(content, changes, "--cache-dir", str(cache), "--changes-only")
    assert result.exit_code == 0, result.output
    made = _media_files(changes)
    assert len(made) == 7 and all(name.startswith("lead-2.") for name in made), made
    assert not (set(made) & set(_media_files(first)))
    # The story naming it is rendered again (its srcset names the new files); the other
    # story is not.
    assert (changes / "stories/2026-11-14/story-number-2/index.html").is_file()
    assert not (changes / "stories/2026-11-14/story-number-1").exists()
    # The same build from nothing publishes what the first build kept plus the changes.
    whole = tmp_path / "whole"
    assert build(content, whole, "--no-cache").exit_code == 0
    assert set(_media_files(whole)) == (set(_media_files(first)) - {
        n for n in _media_files(first) if n.startswith("lead-2.")}) | set(made)
    for name in made:
        assert (whole / "media" / name).read_bytes() == (changes / "media" / name).read_bytes()


def test_an_image_over_the_pixel_limit_is_refused_from_its_header(tmp_path: Path) -> None:
    content = tmp_path / "content"
    (content / "media").mkdir(parents=True)
    (content / "media/wide.png").write_bytes(_png_header(12_000, 8_000))
    story = write_story(content, make_story(1, images=[
        {"url": "media/wide.png", "alt": "x", "credit": "y"}]))
    result = build(content, tmp_path / "public")
    assert result.exit_code == 1
    assert (f"{story}: /images/0/url: content/media/wide.png is 12,000 × 8,000 pixels; at most "
            "60,000,000 pixels in all (image_max_pixels)") in result.output


def test_a_transparent_palette_png_keeps_its_transparency_in_webp(tmp_path: Path) -> None:
    content = tmp_path / "content"
    image = Image.new("RGBA", (600, 400), (0, 0, 0, 0))
    image.paste((200, 30, 30, 255), (100, 100, 500, 300))
    (content / "media").mkdir(parents=True)
    image.quantize(8).save(content / "media/logo.png")  # a palette with a transparent entry
    write_story(content, make_story(1, images=[{"url": "media/logo.png", "alt": "A logo",
                                                "credit": "Its owner"}]))
    out = tmp_path / "public"
    assert build(content, out).exit_code == 0
    webp, = (out / "media").glob("logo.*.480w.webp")
    with Image.open(webp) as variant:
        assert variant.mode == "RGBA"
        assert variant.getpixel((5, 5))[3] == 0 and variant.getpixel((240, 160))[3] == 255
    crop, = (out / "media").glob("logo.*.16x9.jpg")
    with Image.open(crop) as flat:
        assert flat.getpixel((5, 5)) == (255, 255, 255)  # on white


def test_an_unchanged_image_is_not_read_again(tmp_path: Path) -> None:
    """The cache's record of a file stands while its stat is the same: its bytes are read
    only when they may have changed."""
    import os
    content = tmp_path / "content"
    lead = photo(content / "media/lead.jpg", (1200, 800))
    write_story(content, make_story(1, images=[{"url": "media/lead.jpg", "alt": "x",
                                                "credit": "y"}]))
    out, cache = tmp_path / "public", tmp_path / "cache"
    assert build(content, out, "--cache-dir", str(cache)).exit_code == 0
    before = tree(out)
    # Other bytes of the same size, the stat put back: a build that read them would refuse.
    stat = lead.stat()
    with lead.open("r+b") as file:
        file.write(b"x" * stat.st_size)
    os.utime(lead, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert build(content, out, "--cache-dir", str(cache)).exit_code == 0
    assert tree(out) == before
    # Touched, it is read again, and refused.
    os.utime(lead, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    result = build(content, out, "--cache-dir", str(cache))
    assert result.exit_code == 1
    assert "content/media/lead.jpg is not an image desk can read" in result.output


def test_a_fresh_checkout_trusts_git_for_an_unchanged_image(tmp_path: Path) -> None:
    """A record made from a blob stands for a file git holds unchanged with that blob."""
    from desk.content.gitblobs import blob_id
    from desk.content.media import MediaProbe, probe_media

    content = tmp_path / "content"
    lead = photo(content / "media/lead.jpg", (1200, 800))
    refs = [("story.json", "/images/0/url", "media/lead.jpg")]
    first = MediaProbe(content, 10**8, 10**8)
    media, findings, records = probe_media(refs, first)
    assert findings == [] and records["media/lead.jpg"][3] == blob_id(lead.read_bytes())
    # New stats (a clone) and other bytes: with git saying the blob is the recorded one,
    # the record stands; without, the bytes are read (and refused).
    size = lead.stat().st_size
    lead.unlink()
    lead.write_bytes(b"x" * size)
    told = {str(lead): records["media/lead.jpg"][3]}
    again = probe_media(refs, MediaProbe(content, 10**8, 10**8, known=records,
                                         clean=lambda: told))
    assert again[1] == [] and again[0]["media/lead.jpg"].digest == media["media/lead.jpg"].digest
    read = probe_media(refs, MediaProbe(content, 10**8, 10**8, known=records))
    assert [f.code for f in read[1]] == ["image-invalid"]


def test_media_paths_are_checked_names() -> None:
    from desk.urls import media_path

    digest = "0123456789abcdef" * 4
    assert media_path("media/2026/GPU Rack (1).JPG", digest, "960w.webp") == \
        "/media/gpu-rack-1.0123456789ab.960w.webp"
    assert media_path("media/___.png", digest, "png") == "/media/image.0123456789ab.png"
    for bad in (("../x", "jpg/../../x"), ("x", "jpg/"), ("", "x..y")):
        with pytest.raises(ValueError):
            media_path("media/x.jpg", digest if bad[0] != "" else "zz", bad[1])


def _published(content: Path, tmp_path: Path, image: Image.Image | None = None,
               name: str = "media/pic.png", **save: Any) -> tuple[Any, Path]:
    """A site of one story naming one picture (saved from `image` unless None): the
    build's result and the output folder."""
    if image is not None:
        (content / name).parent.mkdir(parents=True, exist_ok=True)
        image.save(content / name, **save)
    write_story(content, make_story(1, images=[{"url": name, "alt": "x", "credit": "y"}]))
    out = tmp_path / "public"
    return build(content, out), out


def _level(path: Path) -> float:
    with Image.open(path) as image:
        grey = image.convert("L")
        return sum(grey.tobytes()) / (grey.width * grey.height)


def test_a_16_bit_greyscale_png_is_published_as_it_looks(tmp_path: Path) -> None:
    """Scanners and charting tools write 16-bit grey: each level is scaled to 8 bits (its
    variants were almost white, every level past 255 cut to 255)."""
    grey = Image.linear_gradient("L").resize((900, 600))
    deep = grey.convert("I").point(lambda v: v * 257).convert("I;16")
    assert deep.mode == "I;16"
    result, out = _published(tmp_path / "content", tmp_path, deep)
    assert result.exit_code == 0, result.output
    expected = _level_of(grey)
    made = sorted((out / "media").glob("pic.*"))
    assert len(made) == 1 + 2 + 3  # the original, 480 and 900 w, three crops
    for path in made:
        if path.suffix != ".png":
            assert abs(_level(path) - expected) < 3, (path.name, _level(path), expected)


def _level_of(image: Image.Image) -> float:
    return sum(image.tobytes()) / (image.width * image.height)


@pytest.mark.parametrize("size", [(2, 1), (1, 2), (1, 1), (3000, 1), (1, 900)])
def test_a_picture_one_pixel_tall_or_wide_is_published(size: tuple[int, int],
                                                       tmp_path: Path) -> None:
    result, out = _published(tmp_path / "content", tmp_path, Image.new("RGB", size, "red"))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    for path in (out / "media").glob("pic.*"):
        with Image.open(path) as made:
            assert made.width >= 1 and made.height >= 1
            if path.name.endswith("w.webp"):
                assert made.width == int(path.name.split(".")[-2].removesuffix("w"))


def test_a_picture_too_tall_for_any_web_variant_is_one_finding(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(2))
    result, out = _published(content, tmp_path, Image.new("L", (1, 16_384), 90))
    assert result.exit_code == 1 and "Traceback" not in result.output
    story = next(content.rglob("story-number-1.json"))
    problems = [line for line in result.output.splitlines() if "/images/" in line]
    assert problems == [f"{story}: /images/0/url: content/media/pic.png is 1 × 16,384 pixels "
                        "(as shown): at most 16,383 times as tall as wide, or its narrowest "
                        "web variant (WebP) cannot hold it"]
    # One pixel shorter, it is published, its variant one pixel wide.
    Image.new("L", (1, 16_383), 90).save(content / "media/pic.png")
    assert build(content, out).exit_code == 0
    assert [p.name.split(".")[-2] for p in (out / "media").glob("pic.*.webp")] == ["1w"]


def _camera_exif(orientation: int = 6) -> Image.Exif:
    exif = Image.Exif()
    exif[ExifTags.Base.Orientation] = orientation
    exif[ExifTags.Base.Make] = "CameraMaker"
    exif[ExifTags.Base.Model] = "Model X100"
    exif[ExifTags.Base.Copyright] = "Jane Roe"
    exif.get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.BodySerialNumber] = "SN123456789"
    gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
    gps[ExifTags.GPS.GPSLatitudeRef] = "N"
    gps[ExifTags.GPS.GPSLatitude] = (52.0, 31.0, 12.5)
    gps[ExifTags.GPS.GPSLongitudeRef] = "E"
    gps[ExifTags.GPS.GPSLongitude] = (13.0, 24.0, 36.5)
    return exif


CAMERA = (b"CameraMaker", b"Model X100", b"SN123456789")


def _xmp_segment() -> bytes:
    body = (b"http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta><rdf:Description "
            b"exif:GPSLatitude='52,31.2N' tiff:Model='Model X100'/></x:xmpmeta>")
    return b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body


def _pixels(data: bytes) -> bytes:
    with Image.open(io.BytesIO(data)) as image:
        return image.convert("RGB").tobytes()


@pytest.mark.parametrize("kind", ["JPEG", "PNG", "WEBP"])
def test_location_and_camera_data_are_stripped_from_the_published_original(
        kind: str, tmp_path: Path) -> None:
    content = tmp_path / "content"
    name = f"media/phone.{kind.lower()}"
    source = content / name
    source.parent.mkdir(parents=True)
    photo(source, (1200, 800), kind)
    with Image.open(source) as image:
        image.save(source, kind, exif=_camera_exif(), **({"quality": 90} if kind == "JPEG"
                                                         else {}))
    if kind == "JPEG":  # an XMP block too, as phones write one
        data = source.read_bytes()
        source.write_bytes(data[:2] + _xmp_segment() + data[2:])
    written = source.read_bytes()
    assert all(mark in written for mark in CAMERA)
    result, out = _published(content, tmp_path, name=name)
    assert result.exit_code == 0, result.output
    original, = (out / "media").glob(f"phone.{'?' * 12}.{'jpg' if kind == 'JPEG' else kind.lower()}")
    data = original.read_bytes()
    assert not any(mark in data for mark in CAMERA) and b"GPSLatitude" not in data
    with Image.open(original) as published:
        exif = published.getexif()
        assert dict(exif) == {ExifTags.Base.Orientation: 6, ExifTags.Base.Copyright: "Jane Roe"}
        assert not exif.get_ifd(ExifTags.IFD.GPSInfo)
        assert ImageOps.exif_transpose(published).size == (800, 1200)  # upright, as stated
    assert _pixels(data) == _pixels(written)  # the same picture, not encoded again
    for path in (out / "media").glob("phone.*"):
        assert not any(mark in path.read_bytes() for mark in CAMERA), path.name
    page = (out / PAGE.replace("story-number-1", "story-number-1") / "index.html")
    assert 'width="800" height="1200"' in page.read_text()

    # The setting keeps them: the original is published byte for byte.
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example"\nkeep_image_metadata = true\n')
    kept = CliRunner().invoke(main, ["build", "--config", str(settings), "--content",
                                     str(content), "--out", str(out), "--now", NOW])
    assert kept.exit_code == 0, kept.output
    assert original.read_bytes() == written


def test_a_multi_picture_jpeg_is_published_as_its_first_picture(tmp_path: Path) -> None:
    """Many cameras' JPEGs, and Android's Ultra HDR, carry a second picture (MPO)."""
    first = Image.linear_gradient("L").resize((1200, 800)).convert("RGB")
    second = Image.new("RGB", (300, 200), (0, 200, 0))
    content = tmp_path / "content"
    name = "media/camera.jpg"
    (content / "media").mkdir(parents=True)
    first.save(content / name, "MPO", save_all=True, append_images=[second],
               exif=_camera_exif(1))
    with Image.open(content / name) as told:
        assert told.format == "MPO" and told.n_frames == 2
    result, out = _published(content, tmp_path, name=name)
    assert result.exit_code == 0, result.output
    original, = (out / "media").glob(f"camera.{'?' * 12}.jpg")
    with Image.open(original) as published:
        assert published.format == "JPEG" and getattr(published, "n_frames", 1) == 1
        assert published.size == (1200, 800) and "mp" not in published.info
        assert abs(_level_of(published.convert("L")) - _level_of(first.convert("L"))) < 2
    data = original.read_bytes()
    assert data.count(b"\xff\xd9") >= 1 and data.endswith(b"\xff\xd9")
    assert not any(mark in data for mark in CAMERA)
    assert len(data) < len((content / name).read_bytes())
    # Kept metadata or not, the second picture is left out.
    settings = tmp_path / "desk.toml"
    settings.write_text('base_url = "https://news.example"\nkeep_image_metadata = true\n')
    kept = CliRunner().invoke(main, ["build", "--config", str(settings), "--content",
                                     str(content), "--out", str(out), "--now", NOW])
    assert kept.exit_code == 0, kept.output
    with Image.open(original) as published:
        assert published.format == "JPEG" and b"CameraMaker" in original.read_bytes()


@pytest.mark.parametrize("url,reason", [
    ("media/Rack photo 1.jpg", "' ' cannot be in a media path (letters, digits, '.', '_' and "
     "'-' between slashes); rename the file, e.g. media/Rack-photo-1.jpg"),
    ("media/.hidden.jpg", "'.hidden.jpg' is a hidden name (it starts with '.'); rename it"),
    ("media/2026/.drafts/x.jpg", "'.drafts' is a hidden name"),
    ("media/rack.jpg?v=2", "a media path names a file, without a query or fragment (leave "
     "out '?v=2')"),
    ("media/" + "r" * 252 + ".jpg", "a name in it is 256 bytes long; at most 255"),
])
def test_a_media_name_desk_will_not_publish_says_why(url: str, reason: str,
                                                     tmp_path: Path) -> None:
    content = tmp_path / "content"
    story = write_story(content, make_story(1, images=[{"url": url, "alt": "x",
                                                        "credit": "y"}]))
    checked = CliRunner().invoke(main, ["check", "--config", str(REPO / "pyproject.toml"),
                                        "--content", str(content)])
    assert checked.exit_code == 1
    problems = [line for line in checked.output.splitlines() if "/images/" in line]
    assert len(problems) == 1, checked.output
    assert problems[0].startswith(f"{story}: /images/0/url: ")
    assert f"{url!r} names a file desk will not publish: {reason}" in problems[0]
    assert "outside" not in problems[0]


def _with_corrupt_exif(path: Path) -> None:
    photo(path, (800, 600))
    data = path.read_bytes()
    # An EXIF block whose first entry says more bytes follow than the block holds.
    tiff = (b"MM\x00*\x00\x00\x00\x08\x00\x05\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06"
            + b"\xff" * 10)
    body = b"Exif\x00\x00" + tiff
    path.write_bytes(data[:2] + b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body
                     + data[2:])


def test_a_corrupt_exif_block_is_one_warning_naming_the_file(tmp_path: Path) -> None:
    content = tmp_path / "content"
    _with_corrupt_exif(content / "media/bad.jpg")
    result, out = _published(content, tmp_path, name="media/bad.jpg")
    assert result.exit_code == 0, result.output
    story = next(content.rglob("story-number-1.json"))
    for output in (result.output, CliRunner().invoke(main, [
            "check", "--config", str(REPO / "pyproject.toml"), "--content",
            str(content)]).output):
        assert "UserWarning" not in output and "site-packages" not in output, output
        warned = [line for line in output.splitlines() if "bad.jpg" in line]
        assert len(warned) == 1, output
        assert warned[0].replace("[image-exif] ", "").startswith(
            f"{story}: /images/0/url: content/media/bad.jpg has EXIF data Pillow cannot read "
            "(Corrupt EXIF data"), warned
    # What Pillow reads of it (the orientation) is used; nothing else is published.
    original, = (out / "media").glob(f"bad.{'?' * 12}.jpg")
    with Image.open(original) as published:
        assert dict(published.getexif()) == {ExifTags.Base.Orientation: 6}
    assert b"\xff" * 10 not in original.read_bytes()[:200]


def test_a_story_whose_picture_cannot_be_published_is_held_back(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(2))
    (content / "media").mkdir(parents=True)
    _truncated_jpeg(content / "media/cut.jpg")
    story = write_story(content, make_story(1, images=[{"url": "media/cut.jpg", "alt": "x",
                                                        "credit": "y"}]))
    out = tmp_path / "public"
    result = build(content, out, "--hold-back")
    assert result.exit_code == 3, result.output
    assert f"Held back {story}" in result.output
    assert (out / "stories/2026-11-14/story-number-2/index.html").is_file()
    assert not (out / "stories/2026-11-14/story-number-1").exists()
