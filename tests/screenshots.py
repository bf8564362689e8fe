"""`make screenshots`: PNGs of the seed story and the front page, narrow and wide, light
and dark, into docs/screenshots/ (served from a fresh build of content/ beside a small
generated corpus, so the front page shows several newsrooms and editions)."""

from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright
from storygen import make_corpus

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
PAGES = {"story": "/stories/2026-11-14/inference-throughput-race-kimi-deepseek/", "front": "/"}


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="desk-shots-"))
    site, content = root / "public", root / "content"
    shutil.copytree(REPO / "content", content)
    make_corpus(content, 24)
    subprocess.run([sys.executable, "-m", "desk", "build", "--config", str(REPO / "pyproject.toml"),
                    "--content", str(content), "--out", str(site),
                    "--now", "2026-11-15T00:00:00Z", "--no-cache"],
                   check=True, stdout=subprocess.DEVNULL)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=CHROMIUM_ARGS)
        for name, path in PAGES.items():
            for width in (375, 1280):
                for scheme in ("light", "dark"):
                    page = browser.new_page(viewport={"width": width, "height": 900},
                                            color_scheme=scheme)
                    page.goto(base + path)
                    target = OUT / f"{name}-{width}-{scheme}.png"
                    # The whole front page: what it shows below the lead is the point.
                    page.screenshot(path=str(target), full_page=(name == "front"))
                    page.close()
                    print(target.relative_to(REPO))
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
