"""A change to desk's own code is seen by the next cached build, without --no-cache.

Each test builds with the installed desk, then with a copy of the package whose code was
changed (found first on PYTHONPATH), into the same output folder with the same cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from storygen import REPO, make_story, write_story

NOW = "2026-11-15T00:00:00Z"


def run_desk(args: list[str], cwd: Path, package_root: Path | None = None
             ) -> subprocess.CompletedProcess[str]:
    """`python -m desk ARGS` in cwd (not the repository, whose desk/ would come first)."""
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    if package_root is not None:
        env["PYTHONPATH"] = str(package_root)
    return subprocess.run([sys.executable, "-m", "desk", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


def changed_copy(tmp_path: Path, module: str, old: str, new: str) -> Path:
    """A copy of desk (with its templates and static files) with one change in `module`."""
    root = tmp_path / "changed"
    shutil.copytree(REPO / "desk", root / "desk",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("templates", "static"):
        shutil.copytree(REPO / folder, root / folder)
    source = root / "desk" / module
    text = source.read_text(encoding="utf-8")
    assert old in text
    source.write_text(text.replace(old, new), encoding="utf-8")
    return root


def build_args(content: Path, tmp_path: Path) -> list[str]:
    return ["build", "--config", str(REPO / "pyproject.toml"), "--content", str(content),
            "--out", str(tmp_path / "public"), "--cache-dir", str(tmp_path / "cache"),
            "--now", NOW, "--no-search", "--jobs", "1"]


def test_a_rendering_change_in_desk_shows_in_the_next_cached_build(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(1))
    args = build_args(content, tmp_path)
    page = tmp_path / "public" / "stories" / "2026-11-14" / "story-number-1" / "index.html"
    first = run_desk(args, tmp_path)
    assert first.returncode == 0, first.stderr
    assert '"@type":"NewsArticle"' in page.read_text(encoding="utf-8")
    assert run_desk(args, tmp_path).returncode == 0  # a cached rebuild keeps the page as it is
    assert '"@type":"NewsArticle"' in page.read_text(encoding="utf-8")

    changed = changed_copy(tmp_path, "render/meta.py", '"NewsArticle"', '"ReportageNewsArticle"')
    second = run_desk(args, tmp_path, changed)
    assert second.returncode == 0, second.stderr
    assert '"@type":"ReportageNewsArticle"' in page.read_text(encoding="utf-8")


def test_a_changed_check_reports_its_finding_in_the_next_cached_build(tmp_path: Path) -> None:
    content = tmp_path / "content"
    write_story(content, make_story(1))
    args = build_args(content, tmp_path)
    first = run_desk(args, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "a rule added since" not in first.stderr

    changed = changed_copy(
        tmp_path, "content/checks.py", "    reviewed,\n)",
        '    reviewed,\n    lambda story, config: iter([Problem("/id", "added-rule",'
        ' "a rule added since", "warning")]),\n)')
    second = run_desk(args, tmp_path, changed)
    assert second.returncode == 0, second.stderr
    assert "/id: a rule added since" in second.stderr
