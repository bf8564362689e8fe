"""`make bench` itself, on a corpus small enough for the test run: the phases run (desk's
start-up among them), each run is written above the earlier ones, the fresh-runner hours
and the sweep hour report their memory, the cold build's rounds count the fastest, desk
serve's starts and saves are timed in the corpus's own folder, the pictures corpus is
measured, and the figures hang together.
Speed is the benchmark's business, never asserted here."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from storygen import REPO

from desk.build.writer import CHANGES

pytestmark = pytest.mark.slow


@pytest.mark.skipif(shutil.which("zstd") is None, reason="the fresh-runner phase archives "
                    "the build cache with zstd, as actions/cache does")
def test_a_quick_bench_runs_every_desk_phase_and_reports_whole_memory(tmp_path: Path) -> None:
    # A desk package where the bench runs is never the one measured: the bench's own
    # work tree is.
    decoy = tmp_path / "desk"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise SystemExit('the folder the bench runs in')\n")
    result = subprocess.run(
        # The pictures corpus at 3 stories, not --quick's 30: the phase still runs whole
        # (its hourly publish adds 10 pictured stories) in about half the time.
        [sys.executable, str(REPO / "bench/bench.py"), "--quick", "--tools", "desk",
         "--fresh", "s3", "--edits", "2", "--pictures", "3", "--cold-rounds", "2",
         "--keep", str(tmp_path), "--results", str(tmp_path / "RESULTS.md")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for phase in ("cold build", "nothing changed", "hourly publish (10 new + 10 edited)",
                  "one story edited"):
        assert re.search(rf"desk\s+{re.escape(phase)}\s+[\d.]+ s\s+\d+ MB", out), phase
    rounds = [float(s) for s in re.findall(r"desk\s+cold build\s+([\d.]+) s", out)]
    assert len(rounds) == 2
    hours = re.findall(r"fresh runner, object storage \(build cache restored\)\s+(sweep)?\s*"
                       r"[\d.]+ s,\s+(\d+) MB \(desk's own\s+(\d+) MB\)", out)
    assert [sweep for sweep, _, _ in hours] == ["", "", "", "sweep"]
    for _, whole, own in hours:
        # Every process together, Pagefind's included, holds at least desk's own share.
        assert int(whole) >= int(own) > 0
    for situation in ("nothing known", "after desk build", "after a preview"):
        assert re.search(rf"desk\s+serve start, {situation}\s+[\d.]+ s to both pages", out)
    # The flags say how many: --quick's own counts only fill in for those not given.
    assert re.search(r"save → reload event: median \d+ ms \(\d+, \d+\)", out)
    # The fresh runner's hours build as publish-s3.yml does: the report written, and
    # GitHub's job summary, one for each of the four hours.
    report = json.loads((tmp_path / "200/desk/publish-report.json").read_text(encoding="utf-8"))
    assert report["ok"] and report["published"] > 0
    summary = (tmp_path / "200/desk/summary.md").read_text(encoding="utf-8")
    assert summary.count("## desk publish") == 4
    # The preview's folder (its index) is the corpus's, never the repository's.
    assert list((tmp_path / "200/desk/cache/preview").glob("index-*.sqlite"))
    written = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert re.search(r"; desk's code: commit [0-9a-f]{7,}( with uncommitted changes)?\.", written)
    assert "### Pictures: 3 stories (desk only)" in written
    assert re.search(r"`python -m desk --help`: [\d.]+ s, median of \d+ .*CPU", written)
    assert re.search(r"\| `desk --help` ≤ 0\.2 s \| [\d.]+ s \| (met|not met) \|", written)
    assert re.search(r"\| no pictures \(0 pictures\) \| [\d.]+ s, \d+ MB \| [\d.]+ s, \d+ MB \|",
                     written)
    assert re.search(r"\| one story in three pictured \(1 pictures\) \| [\d.]+ s, \d+ MB \| "
                     r"[\d.]+ s, \d+ MB \|", written)
    assert "The hour of a correction sweep (25 stories edited" in written
    assert re.search(r"desk serve, save → reload < 300 ms \| \d+ ms", written)
    assert re.search(r"\| preview start ≤ 5 s \([^|]*after a preview\) \| [\d.]+ s \|", written)
    if Path("/usr/bin/chromium").exists():
        assert re.search(r"\| save → visible in the browser ≤ 300 ms [^|]* \| \d+ ms \|", written)
        for situation in ("on a fresh clone", "on another port"):
            assert re.search(rf"desk serve first save, {situation} [^:]*: page shown at "
                             r"[\d.]+ s, save → shown [\d.]+ s", out), situation
            assert re.search(rf"\| first save ≤ 1 s {situation} [^|]* \| [\d.]+ s \| "
                             r"(met|not met) \|", written), situation
        assert re.search(r"\| the preview's folder ≤ a quarter of the built site \| \d+ MB of "
                         r"\d+ MB \| (met|not met) \|", written)
    fastest = re.search(r"\| desk [^|]+ \| ([\d.]+) s \|", written)
    assert fastest is not None and float(fastest.group(1)) == min(rounds)
    assert ("Cold builds, the fastest of 2 rounds, the tools taking turns (each round "
            "another goes first): desk " + ", ".join(f"{s:.2f}" for s in rounds) + " s.") in written


def test_cold_goal_is_judged_fastest_against_fastest_and_round_by_round() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import bench  # type: ignore[import-not-found]

    results = {"desk": {}, "Hugo": {}}
    for number, (ours, theirs) in enumerate([(9.0, 6.0), (16.0, 17.0), (20.0, 19.0)], 1):
        results["desk"][f"{bench.COLD_ROUND}{number}"] = (ours, 150.0)
        results["Hugo"][f"{bench.COLD_ROUND}{number}"] = (theirs, 1400.0)
    for name, row in results.items():
        row["cold"] = (min(s for s, _ in row.values()), 1400.0 if name == "Hugo" else 150.0)
        for phase in ("unchanged", "hourly", "one"):
            row[phase] = (1.0, 60.0)
    lines = "\n".join(bench.goals(10_000, results))
    # 9/6, 16/17, 20/19: the median of the rounds' ratios is 20/19.
    assert "| cold build ≤ 1.25× Hugo's, paired (median of the rounds' ratios) | 1.05× | met |" in lines
    assert "| cold build ≤ 1.25× Hugo's (fastest against fastest) | 1.50× | not met |" in lines
    table = "\n".join(bench.table(10_000, results, {"desk": "0.1.0", "Hugo": "0.168.0"}))
    assert "desk ÷ Hugo, cold, round by round: 1.50×, 0.94×, 1.05× (median 1.05×)." in table
    without_desk = "\n".join(bench.table(10_000, {"Hugo": results["Hugo"]}, {"Hugo": "0.168.0"}))
    assert "Hugo 6.00, 17.00, 19.00 s." in without_desk and "round by round" not in without_desk


def test_issue_34_goals_judge_the_start_after_a_preview_and_the_browser() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import bench  # type: ignore[import-not-found]

    desk = {"start nothing": (40.0, 0.0), "start build": (41.0, 0.0),
            "start preview": (4.0, 0.0), "start nothing ready": (39.9, 38.0),
            "start build ready": (40.9, 39.0), "start preview ready": (3.9, 2.0),
            "serve": (0.2, 0.0), "browser": (0.25, 0.0),
            "browser 1": (0.3, 0.0), "browser 2": (0.25, 0.0), "browser 3": (0.2, 0.0),
            "fresh-s3": (3.5, 300.0), "fresh-s3 sweep": (11.0, 600.0), "fresh-s3 desk": (0.0, 290.0)}
    lines = "\n".join(bench.goals(100_000, {"desk": desk}))
    assert ("| preview start ≤ 5 s (desk serve run → its front page and a story's page served, "
            "after a preview) | 4.00 s | met |") in lines
    assert "nothing known (no preview folder, no build cache or site): beside the goal | 40.00 s | – |" in lines
    assert ("| save → visible in the browser ≤ 300 ms (the new headline shown in Chromium, "
            "median) | 250 ms | met |") in lines
    assert "| hourly publish on a fresh runner (object storage) ≤ 3 s (issue #34) | 3.50 s | not met |" in lines
    assert "| hourly publish on a fresh runner ≤ 30 s (object storage) | 3.50 s | met |" in lines
    assert "(issue #34)" not in "\n".join(bench.goals(10_000, {"desk": desk}))
    # A run without the builds (--phases serve) has desk's lines and no build table.
    table = "\n".join(bench.table(100_000, {"desk": desk}, {"desk": "0.1.0"}))
    assert "| tool |" not in table
    assert "reloading itself: 250 ms (median of 300, 250, 200 ms)." in table
    assert "after a preview (the folder the last desk serve left, stopped by SIGTERM) 4.00 s (3.90 s, 2.00 s)" in table


def test_the_preview_goals_judge_the_first_save_and_the_folder() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import bench  # type: ignore[import-not-found]

    desk = {"first save nothing": (0.8, 0.0), "first save nothing page": (6.0, 0.0),
            "first save port": (1.5, 0.0), "first save port page": (1.0, 0.0),
            "footprint": (100.0, 640.0)}
    lines = "\n".join(bench.goals(10_000, {"desk": desk}))
    assert ("| first page ≤ 5 s on a fresh clone (desk serve run → a story's page shown in "
            "Chromium) | 6.00 s | not met |") in lines
    assert "| first save ≤ 1 s on a fresh clone (no preview folder, " in lines
    assert "| first save ≤ 1 s on another port (after a preview on the usual one) " in lines
    assert "(save → new headline shown in Chromium) | 0.80 s | met |" in lines
    assert "(save → new headline shown in Chromium) | 1.50 s | not met |" in lines
    assert "| the preview's folder ≤ a quarter of the built site | 100 MB of 640 MB | met |" in lines
    table = "\n".join(bench.table(10_000, {"desk": desk}, {"desk": "0.1.0"}))
    assert "on another port (after a preview on the usual one), page shown at 1.00 s, save → " \
        "new headline shown 1.50 s." in table
    assert "desk serve's folder after them: 100 MB (the built site: 640 MB)." in table
    # After the fresh phase's hours the output folder holds their changes only: the site
    # is not on disk, and the folder's goal is not judged against the changes.
    desk["footprint"] = (100.0, 0.0)
    assert "preview's folder ≤ a quarter" not in "\n".join(bench.goals(10_000, {"desk": desk}))
    assert "(the built site: not on disk (public/ holds the last --changes-only build's " \
        "changes))." in "\n".join(bench.table(10_000, {"desk": desk}, {"desk": "0.1.0"}))


def test_the_site_s_size_is_not_taken_from_a_folder_of_changes(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import bench  # type: ignore[import-not-found]

    (tmp_path / "index.html").write_bytes(b"x" * 10_000)
    assert bench.site_mb(tmp_path) > 0
    (tmp_path / CHANGES).write_text("{}")
    assert bench.site_mb(tmp_path) == 0.0


def test_a_run_whose_newest_story_would_not_be_published_is_refused() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import bench  # type: ignore[import-not-found]

    bench.check_published([100_000], 2)  # the newest: May 2029, before NOW
    with pytest.raises(SystemExit, match="after the builds' --now"):
        bench.check_published([1000, 120_000], 1)


def test_a_run_is_written_above_the_runs_the_results_file_held() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import bench  # type: ignore[import-not-found]

    first = bench.with_earlier_runs(["## run 1", "", "one"], "")
    assert first == bench.RESULTS_HEAD + "\n## run 1\n\none\n"
    edited = first.replace("newest first", "newest first (edited)")
    second = bench.with_earlier_runs(["## run 2", "", "two", ""], edited)
    assert second == (bench.RESULTS_HEAD.replace("newest first", "newest first (edited)")
                      + "\n## run 2\n\ntwo\n\n## run 1\n\none\n")
