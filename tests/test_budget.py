"""The size budget: what a built site weighs, and the warning before GitHub Pages' limit."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner
from conftest import Result
from storygen import REPO, make_corpus

from desk.cli import main
from desk.publish.budget import (
    PAGES_LIMIT,
    SiteSize,
    budget_warning,
    limit_date,
    measure,
    stories_per_day,
    worth_measuring,
)

NOW = datetime(2026, 11, 15, tzinfo=UTC)


def test_report_gives_bytes_by_part_and_per_story(tmp_path: Path) -> None:
    content, out = tmp_path / "content", tmp_path / "public"
    make_corpus(content, 9)
    report, summary = tmp_path / "report.json", tmp_path / "summary.md"
    result = CliRunner().invoke(main, [
        "build", "--config", str(REPO / "pyproject.toml"), "--content", str(content),
        "--out", str(out), "--now", "2026-11-15T00:00:00Z", "--cache-dir",
        str(tmp_path / "cache"), "--report", str(report)],
        env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 0, result.output
    size = json.loads(report.read_text())["size"]
    files = [p for p in out.rglob("*") if p.is_file() and p.name != ".desk-site"]
    assert size["bytes"] == sum(p.stat().st_size for p in files)
    assert size["files"] == len(files) and size["stories"] == 9
    assert size["bytes_per_story"] == size["bytes"] // 9
    assert sum(size["parts"].values()) == size["bytes"]
    story_html = sum(p.stat().st_size for p in out.glob("stories/*/*/index.html"))
    assert size["parts"]["story html"] == story_html
    assert {"story json", "story md", "list", "feed", "search", "static"} <= set(size["parts"])
    assert size["parts"]["search"] == sum(p.stat().st_size for p in files
                                          if "pagefind" in p.relative_to(out).parts)
    assert size["pages_limit"] == PAGES_LIMIT and size["warning"] is None
    assert "KB per story" in result.stdout and "| story html |" in summary.read_text()


def test_publishing_rate_counts_the_last_thirty_days() -> None:
    recent = [NOW - timedelta(hours=12 * n) for n in range(60)]  # two a day for 30 days
    older = [NOW - timedelta(days=40 + n) for n in range(100)]
    later = [NOW + timedelta(hours=1)]
    assert stories_per_day(recent + older + later, NOW) == 2.0
    assert stories_per_day([], NOW) == 0.0


def test_warning_past_eighty_percent_with_the_projected_date() -> None:
    limit = 1000
    size = SiteSize(total=850, files=40, stories=10, parts={})  # 85 bytes per story
    # 150 bytes left at 2 stories (170 bytes) a day: 0.88 days.
    assert limit_date(size, 2.0, NOW, limit) == date(2026, 11, 15)
    warning = budget_warning(size, 1.0, NOW, limit)
    assert warning is not None and "85% of GitHub Pages'" in warning
    assert "around 2026-11-16" in warning  # 150 / 85 = 1.8 days
    assert budget_warning(SiteSize(799, 40, 10, {}), 1.0, NOW, limit) is None
    assert "no story was published" in (budget_warning(size, 0.0, NOW, limit) or "")
    assert "over the limit" in (budget_warning(SiteSize(1200, 1, 10, {}), 1.0, NOW, limit)
                                or "")
    # The real limit: 14,000 stories of 69 KB is near it, 10,000 well below.
    assert budget_warning(SiteSize(10_000 * 69_000, 1, 10_000, {}), 5.0, NOW) is None
    at_14k = budget_warning(SiteSize(14_000 * 69_000, 1, 14_000, {}), 20.0, NOW)
    assert at_14k is not None and "97% of GitHub Pages' 1 GB" in at_14k


def test_measure_leaves_out_the_marker(tmp_path: Path) -> None:
    (tmp_path / ".desk-site").write_bytes(b"x" * 100)
    (tmp_path / "stories" / "2026-11-14" / "a").mkdir(parents=True)
    (tmp_path / "stories" / "2026-11-14" / "a" / "index.md").write_bytes(b"m" * 7)
    (tmp_path / "feed.xml").write_bytes(b"f" * 5)
    size = measure(tmp_path, 1)
    assert (size.total, size.files) == (12, 2)
    assert size.parts == {"feed": 5, "story md": 7}


def test_small_builds_skip_the_walk_unless_asked(tmp_path: Path,
                                                 desk: Callable[..., Result]) -> None:
    assert not worth_measuring(4_999) and worth_measuring(5_000)
    content = tmp_path / "content"
    make_corpus(content, 2)
    result = desk("build", "--content", str(content), "--out", str(tmp_path / "public"),
                  "--now", "2026-11-15T00:00:00Z", "--cache-dir", str(tmp_path / "cache"))
    assert result.exit_code == 0 and "Site:" not in result.stdout
