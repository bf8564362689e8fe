"""desk as a newsroom installs it: the wheel, in a fresh environment outside this
repository, starting a site with `desk init` and building it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import NOW, tree
from storygen import REPO

pytestmark = pytest.mark.slow

BASE_URL = "https://news.example.org"
STORY = "stories/2026-11-14/inference-throughput-race-kimi-deepseek/"
# What the wheel is built from: the repository less what never goes into it (top-level
# names: desk/content and desk/build are packages, not the site's content or a build).
TOP_LEVEL_ONLY = {".git", ".venv", ".bench", ".desk-cache", "public", "_site", "build",
                  "content", "tests", "docs", "bench"}
ANYWHERE = shutil.ignore_patterns(".public.*", "*.egg-info", "__pycache__", ".*_cache",
                                  ".hypothesis")


def not_packaged(folder: str, names: list[str]) -> set[str]:
    ignored = set(ANYWHERE(folder, names))
    if Path(folder) == REPO:
        ignored |= TOP_LEVEL_ONLY & set(names)
    return ignored

def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GITHUB_STEP_SUMMARY")}
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"
    return result


@pytest.fixture(scope="module")
def desk_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The desk command of a fresh environment where desk is installed from its wheel."""
    root = tmp_path_factory.mktemp("install")
    shutil.copytree(REPO, root / "source", ignore=not_packaged)
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
        root / "dist", root / "source", cwd=root)
    (wheel,) = (root / "dist").glob("desk-*.whl")
    venv = root / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=root)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=root).stdout.strip())
    # desk's dependencies come from this test environment (the lock installed them); desk
    # itself only from the wheel: the editable install here is not seen (.pth files in a
    # folder added this way are not run).
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "desk-test-dependencies.pth").write_text("\n".join(sorted(outer)) + "\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        wheel, cwd=root)
    where = run(python, "-c", "import desk.render.theme as t; print(t.__file__); "
                "print(t.shipped('templates'))", cwd=root).stdout.split()
    assert all(Path(p).is_relative_to(venv) for p in where), where
    return python.parent / "desk"


@pytest.fixture(scope="module")
def site(desk_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site started with `desk init`, checked and built by the installed desk."""
    root = tmp_path_factory.mktemp("newsroom")
    run(desk_bin, "init", "newsroom", "--base-url", BASE_URL, "--title", "Example News",
        cwd=root)
    site = root / "newsroom"
    checked = run(desk_bin, "check", cwd=site)
    assert "1 stories checked: 0 error(s), 0 warning(s)" in checked.stderr
    run(desk_bin, "build", "--now", NOW, cwd=site)
    return site


def test_installed_desk_starts_checks_and_builds_a_complete_site(site: Path) -> None:
    public = site / "public"
    for name in ("index.html", "index.json", STORY + "index.html", STORY + "index.md",
                 STORY + "index.json", "n/index.html", "n/artificial-intelligence/index.html",
                 "editions/index.html", "editions/2026-11-14T12/index.html", "feed.xml",
                 "atom.xml", "feed.json", "sitemap.xml", "news-sitemap.xml", "llms.txt",
                 "llms-full.txt", "terms/reuse/index.html", ".well-known/reuse.json",
                 "search/index.html", "search/bundles.json", "404.html", "robots.txt",
                 "static/og-default.png"):
        assert (public / name).is_file(), name
    assert len(list((public / "static").glob("site.*.css"))) == 1
    home = (public / "index.html").read_text(encoding="utf-8")
    assert f'<link rel="canonical" href="{BASE_URL}/">' in home
    assert "<title>Example News" in home
    for name in ("sitemap.xml", "feed.xml", "robots.txt", "llms.txt"):
        text = (public / name).read_text(encoding="utf-8")
        assert BASE_URL in text and "https://hangingcontext.com/" not in text, name
    for name in ("desk.toml", "README.md", "requirements.txt", ".gitignore",
                 ".github/workflows/publish.yml"):
        assert (site / name).is_file(), name


def test_one_template_override_changes_only_what_it_renders(site: Path, desk_bin: Path,
                                                           tmp_path: Path) -> None:
    public = site / "public"
    before = tree(public)
    shipped = run(desk_bin.parent / "python", "-c", "from desk.render.theme import shipped; "
                  "print(shipped('templates'))", cwd=tmp_path).stdout.strip()
    story = (Path(shipped) / "story.html").read_text(encoding="utf-8")
    ours = story.replace("<h1>{{ s.headline }}</h1>", '<h1 class="ours">{{ s.headline }}</h1>')
    assert ours != story
    (site / "templates").mkdir()
    (site / "templates" / "story.html").write_text(ours, encoding="utf-8")
    try:
        run(desk_bin, "build", "--now", NOW, cwd=site)
        after = tree(public)
    finally:
        shutil.rmtree(site / "templates")
    # The search index is made from the pages (Pagefind's own files); the marker holds the
    # build's id. Everything else is the templates' output.
    changed = {name for name in before.keys() | after.keys()
               if before.get(name) != after.get(name)
               and not name.startswith("pagefind/") and name != ".desk-site"}
    assert any(name.startswith("pagefind/fresh/") for name in after)
    assert changed == {STORY + "index.html"}
    assert b'<h1 class="ours">' in after[STORY + "index.html"]
