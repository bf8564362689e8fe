"""Internal link checking of a built site: every link desk makes (root-relative hrefs,
srcs and srcset candidates, CSS url(), head links, feed, enclosure and sitemap URLs under
the base URL) must resolve to a file in the output folder."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from desk import urls
from desk.config import Config
from desk.content.findings import Finding

_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)['\"]?\s*\)")
_XML_LINK = re.compile(r"<(?:loc|link|id|guid[^>]*)>([^<]+)</|(?:href|url)=\"([^\"]+)\"")
# The RSL licence file's links are its <terms>; a <content url> is a path pattern, which
# matches files (RFC 9309's rules) rather than naming one.
_RSL_LINK = re.compile(r"<terms>([^<]+)</terms>")


class _Links(HTMLParser):
    """Collects link targets and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            elif name in ("href", "src") and (tag != "a" or not urlsplit(value).scheme):
                # Absolute URLs in <a> come from authors (related stories published
                # elsewhere); desk's own navigation is root-relative.
                self.links.append(value)
            elif name == "srcset":
                # Candidates are "URL [descriptor]", comma-separated: each URL a link.
                self.links += [c.split()[0] for c in value.split(",") if c.strip()]


def check_links(out_dir: Path, config: Config) -> list[Finding]:
    """Every internal link of every page, feed, sitemap and stylesheet that does not resolve."""
    findings: list[Finding] = []
    for path in sorted(out_dir.rglob("*")):
        if not path.is_file():
            continue
        page = "/" + path.relative_to(out_dir).as_posix()
        suffix = path.suffix
        if suffix == ".html":
            parser = _Links()
            parser.feed(path.read_text(encoding="utf-8"))
            links, ids = parser.links, parser.ids
        elif suffix == ".css":
            links, ids = _CSS_URL.findall(path.read_text(encoding="utf-8")), set()
        elif page == urls.LICENCE:
            links, ids = _RSL_LINK.findall(path.read_text(encoding="utf-8")), set()
        elif suffix == ".xml":
            text = path.read_text(encoding="utf-8")
            links = [a or b for a, b in _XML_LINK.findall(text)]
            ids = set()
        else:
            continue
        for link in links:
            problem = _resolve(link, page, ids, out_dir, config)
            if problem:
                findings.append(Finding(path.as_posix(), "", "broken-link",
                                        f"{link}: {problem}"))
    return findings


def _resolve(link: str, page: str, ids: set[str], out_dir: Path,
             config: Config) -> str | None:
    parts = urlsplit(link)
    if parts.scheme or parts.netloc:
        base = urlsplit(config.base_url)
        if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
            return None  # another site
        path = parts.path
    elif link.startswith("#"):
        fragment = unquote(link[1:])
        return None if not fragment or fragment in ids else "no element with this id"
    elif link.startswith("/"):
        path = parts.path
    else:
        path = page.rsplit("/", 1)[0] + "/" + parts.path
    if config.base_path:
        if not path.startswith(config.base_path + "/"):
            return "outside the site's base path"
        path = path[len(config.base_path):]
    target = out_dir / unquote(path).lstrip("/")
    try:
        target.resolve().relative_to(out_dir.resolve())
    except ValueError:
        return "points outside the site"
    if path.endswith("/") or target.is_dir():
        target = target / "index.html"
    return None if target.is_file() else "no such file in the output"
