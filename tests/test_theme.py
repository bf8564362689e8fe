"""desk's own templates and static files, and a site's, which override them file by file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from conftest import tree
from storygen import REPO, make_corpus

from desk.build.keys import templates_fingerprint
from desk.build.pipeline import build
from desk.config import load_config
from desk.content.catalog import Clock
from desk.render.assets import collect_assets
from desk.render.templates import make_environment
from desk.render.theme import shipped

NOW = datetime(2026, 11, 11, tzinfo=UTC)
STORY = "stories/2026-11-10/story-number-1/index.html"


def test_shipped_folders_hold_every_template_and_asset() -> None:
    assert (shipped("templates") / "story.html").is_file()
    assert (shipped("static") / "og-default.png").is_file()
    # In this checkout desk's own files are the repository's top-level folders.
    assert shipped("templates").resolve() == (REPO / "templates").resolve()


def test_a_site_template_overrides_only_its_own_name(tmp_path: Path) -> None:
    site = tmp_path / "templates"
    site.mkdir()
    config = load_config(REPO / "pyproject.toml", {"templates_dir": site})
    env = make_environment(config, reload=True)
    packaged = env.get_template("404.html").filename
    assert packaged is not None and Path(packaged).parent == shipped("templates")
    # Added while an environment is in use (desk serve): picked up at the next lookup.
    (site / "404.html").write_text("<p>our own 404</p>\n")
    assert env.get_template("404.html").render() == "<p>our own 404</p>\n"
    assert Path(str(env.get_template("story.html").filename)).parent == shipped("templates")
    (site / "404.html").unlink()  # and removed again: desk's own is back
    assert env.get_template("404.html").filename == packaged


def test_site_static_files_win_by_name_and_desk_s_fill_the_rest(tmp_path: Path) -> None:
    site = tmp_path / "static"
    (site / "img").mkdir(parents=True)
    (site / "site.css").write_text("body { color: red }\n")
    (site / "img" / "logo.svg").write_text("<svg/>")
    (site / ".hidden").write_text("no")
    assets = {a.name: a for a in collect_assets(site)}
    assert set(assets) == {"site.css", "site.js", "search.js", "og-default.png", "favicon.svg",
                           "img/logo.svg"}
    assert assets["site.css"].source == site / "site.css"
    assert assets["site.js"].source == shipped("static") / "site.js"
    assert assets["og-default.png"].path == "/static/og-default.png"
    assert assets["site.css"].path.startswith("/static/site.") and assets["site.css"].path != (
        collect_assets(tmp_path / "none")[1].path)


def test_fingerprint_covers_the_site_overrides_and_desk_s_own(tmp_path: Path) -> None:
    site = tmp_path / "templates"
    empty = templates_fingerprint(site)
    site.mkdir()
    (site / "story.html").write_text("x")
    assert templates_fingerprint(site) != empty
    assert templates_fingerprint(site) != templates_fingerprint(shipped("templates"))


def test_adding_an_override_rebuilds_what_it_renders(tmp_path: Path) -> None:
    content = tmp_path / "content"
    make_corpus(content, 4)
    site_templates = tmp_path / "templates"
    config = load_config(REPO / "pyproject.toml", {
        "search": False, "cache_dir": tmp_path / "cache", "content_dir": content,
        "output_dir": tmp_path / "public", "templates_dir": site_templates,
        "static_dir": tmp_path / "static"})
    assert build(config, Clock(NOW)).ok
    before = tree(config.output_dir)
    site_templates.mkdir()
    story = (shipped("templates") / "story.html").read_text(encoding="utf-8")
    marked = story.replace("<h1>{{ s.headline }}</h1>", '<h1 class="ours">{{ s.headline }}</h1>')
    assert marked != story
    (site_templates / "story.html").write_text(marked, encoding="utf-8")
    again = build(config, Clock(NOW))  # with the build cache: unchanged keys would be reused
    assert again.ok
    after = tree(config.output_dir)
    changed = {name for name in before.keys() | after.keys()
               if before.get(name) != after.get(name)}
    assert changed == {f"stories/2026-11-10/story-number-{n}/index.html" for n in range(4)} | {
        ".desk-site"}
    assert b'<h1 class="ours">' in after[STORY]
