"""Telling search engines and feed readers what a publish changed: IndexNow and WebSub.

Which URLs: the site's files that a deploy uploaded (from `desk deploy --report`), or
that differ between a built site and the one before it; of those, every page (a folder's
`index.html`, announced as the folder's URL) and every feed. IndexNow takes them in one
POST of at most 10,000 URLs each, with the key the site serves at `/{key}.txt`; the
WebSub hub is pinged once for each changed feed.

Announcing is a courtesy, never part of publishing: every request shares one time
limit, and what fails is reported, never raised.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from desk import urls
from desk.config import AnnounceConfig, Config
from desk.content.models import check_url
from desk.publish.checkrun import code_span
from desk.render.kinds import kind_of

# IndexNow takes at most this many URLs in one request.
BATCH = 10_000
_FEEDS = frozenset({urls.FEED_RSS, urls.FEED_ATOM, urls.FEED_JSON})
_PAGE = "index.html"
# desk's own files in a built site, which are never published.
_OWN = frozenset({".desk-site", ".desk-changes.json"})
_LIST_FORMAT = "desk-announce/1"


@dataclass(frozen=True)
class Announcement:
    """What to announce: absolute URLs of the changed pages and feeds."""

    pages: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()

    @property
    def urls(self) -> tuple[str, ...]:
        """Everything IndexNow is told of: pages, then feeds."""
        return self.pages + self.feeds

    def as_json(self, site: str | None = None) -> dict[str, Any]:
        """The list `desk announce --list` writes and `--urls` reads, with the base URL of
        the site its URLs are of."""
        return {"format": _LIST_FORMAT, **({"site": site} if site else {}),
                "pages": list(self.pages), "feeds": list(self.feeds)}

    @classmethod
    def from_json(cls, data: Any) -> Announcement:
        """The list as written; ValueError when it is not one."""
        if not isinstance(data, dict) or data.get("format") != _LIST_FORMAT:
            raise ValueError("not a list of URLs written by desk announce --list")
        pages, feeds = data.get("pages"), data.get("feeds")
        if not (isinstance(pages, list) and isinstance(feeds, list)
                and all(isinstance(u, str) for u in pages + feeds)):
            raise ValueError("its pages and feeds must be lists of URLs")
        return cls(tuple(pages), tuple(feeds))

    def under(self, base_url: str) -> tuple[Announcement, tuple[str, ...]]:
        """The URLs of the site at base_url, and the others (IndexNow refuses a whole
        batch when one URL is another host's; a hub is pinged for this site's feeds)."""
        def ours(url: str) -> bool:
            return url.startswith(base_url + "/") and _is_url(url)
        kept = Announcement(tuple(filter(ours, self.pages)), tuple(filter(ours, self.feeds)))
        return kept, tuple(u for u in self.urls if not ours(u))


def _is_url(url: str) -> bool:
    try:
        check_url(url)
    except ValueError:
        return False
    return True


def list_site(data: Any) -> str | None:
    """The base URL a list written by `desk announce --list` names (None: none, or not a
    URL)."""
    site = data.get("site") if isinstance(data, dict) else None
    return site.rstrip("/") if isinstance(site, str) and _is_url(site) else None


def built_for(site: Path) -> str:
    """The base URL a built site was built for: the home page's canonical URL, as its
    publisher document gives it; ValueError saying why when it does not."""
    where = site / urls.relative_file(urls.PUBLISHER_JSON)
    try:
        home = json.loads(where.read_bytes()).get("url")
    except (OSError, ValueError, AttributeError) as exc:
        raise ValueError(f"{where}: cannot tell the URL the site was built for "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(home, str) or not home.endswith("/") or not _is_url(home):
        raise ValueError(f"{where}: its url {home!r} is not the absolute URL of a site")
    return home.rstrip("/")


def announcement(config: Config, changed: Iterable[str],
                 removed: Iterable[str] = ()) -> Announcement:
    """The pages and feeds among changed site paths (relative, '/'-separated), and the
    pages among removed ones (search engines learn sooner that they are gone)."""
    pages = {_page_url(config, path) for path in (*changed, *removed)
             if path.rpartition("/")[2] == _PAGE}
    feeds = {urls.absolute(config, "/" + path) for path in changed
             if path.rpartition("/")[2] in _FEEDS and kind_of(path) == "feed"}
    return Announcement(tuple(sorted(pages)), tuple(sorted(feeds)))


def _page_url(config: Config, path: str) -> str:
    """A folder's index.html as the folder's URL."""
    return urls.absolute(config, "/" + path[: -len(_PAGE)])


def deployed_paths(report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The site paths a deploy uploaded and deleted, from its JSON report; ValueError when
    the report is not one of a finished deploy (announcing half a deploy would send
    readers to pages not up yet)."""
    if not isinstance(report, dict) or not isinstance(report.get("log"), list):
        raise ValueError("not a report written by desk deploy --report")
    if not report.get("ok") or report.get("dry_run"):
        raise ValueError("the deploy did not finish (or was a dry run): nothing to announce")
    steps = [step for step in report["log"] if isinstance(step, list) and len(step) == 2]
    return ([str(path) for action, path in steps if action == "put"],
            [str(path) for action, path in steps if action == "delete"])


def changed_paths(site: Path, since: Path) -> tuple[list[str], list[str]]:
    """The files of a built site that the site before it (`since`) lacks or holds with
    other bytes, and its pages that the built site no longer has. Files desk kept from
    the last build are hard links to the same bytes, so most are told apart by their
    inode without being read."""
    changed = []
    for folder, _, names in os.walk(site):
        for name in names:
            new = Path(folder, name)
            path = new.relative_to(site).as_posix()
            if path in _OWN:
                continue
            old = since / path
            try:
                before, after = old.stat(), new.stat()
            except FileNotFoundError:
                changed.append(path)
                continue
            if (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino):
                continue
            if before.st_size != after.st_size or old.read_bytes() != new.read_bytes():
                changed.append(path)
    removed = [Path(folder, _PAGE).relative_to(since).as_posix()
               for folder, _, names in os.walk(since)
               if _PAGE in names and not (site / Path(folder).relative_to(since) / _PAGE).exists()]
    return sorted(changed), sorted(removed)


@dataclass
class Sent:
    """One request and how it went."""

    service: str  # "IndexNow" or "WebSub"
    target: str  # the endpoint, or the feed pinged
    urls: int
    status: int | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass
class Deadline:
    """The time left of one announce's limit."""

    seconds: float
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def left(self) -> float:
        return self.seconds - (self.clock() - self.started)


def announce(config: Config, settings: AnnounceConfig, what: Announcement) -> list[Sent]:
    """Submit the URLs to IndexNow and ping the hub for each feed, as configured; each
    request's outcome, in order. Nothing configured, nothing sent."""
    deadline = Deadline(settings.time_limit_seconds)
    sent: list[Sent] = []
    if settings.indexnow_endpoint and config.indexnow_key and what.urls:
        for body, count in indexnow_bodies(config, what.urls):
            sent.append(post(Sent("IndexNow", settings.indexnow_endpoint, count), body,
                             "application/json; charset=utf-8", deadline))
    if config.websub_hub:
        for feed in what.feeds:
            body = urllib.parse.urlencode({"hub.mode": "publish", "hub.url": feed}).encode()
            sent.append(post(Sent("WebSub", feed, 1), body,
                             "application/x-www-form-urlencoded", deadline,
                             config.websub_hub))
    return sent


def indexnow_bodies(config: Config, announced: tuple[str, ...]) -> list[tuple[bytes, int]]:
    """IndexNow's JSON bodies, at most BATCH URLs each, with how many each holds."""
    key = config.indexnow_key or ""
    common = {"host": urlsplit(config.base_url).hostname, "key": key,
              "keyLocation": urls.absolute(config, urls.key_file_path(key))}
    return [(json.dumps(common | {"urlList": list(announced[start:start + BATCH])},
                        ensure_ascii=False).encode("utf-8"),
             len(announced[start:start + BATCH]))
            for start in range(0, len(announced), BATCH)]


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not an instruction: a POST is never re-sent elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


def post(sent: Sent, body: bytes, content_type: str, deadline: Deadline,
         url: str | None = None) -> Sent:
    """POST body to url (default: sent.target) within the time left; sent, filled in."""
    left = deadline.left()
    if left <= 0:
        sent.error = "not sent: the time limit was reached"
        return sent
    request = urllib.request.Request(url or sent.target, data=body, method="POST",
                                     headers={"Content-Type": content_type,
                                              "User-Agent": "desk announce"})
    try:
        with _OPENER.open(request, timeout=left) as answer:
            sent.status = answer.status
            answer.read(65536)
    except urllib.error.HTTPError as exc:
        sent.status = exc.code
        sent.error = f"answered {exc.code} {exc.reason}"
    except (urllib.error.URLError, HTTPException, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        sent.error = f"no answer: {reason}" if str(reason) else "no answer: timed out"
    if sent.status is not None and not 200 <= sent.status < 300 and not sent.error:
        sent.error = f"answered {sent.status}"
    return sent


def announce_markdown(what: Announcement, sent: list[Sent], note: str = "") -> str:
    """The job summary: what was announced where, and every failure as a warning."""
    lines = ["## desk announce", ""]
    if note:
        lines += [note, ""]
    lines.append(f"{len(what.pages)} page(s) and {len(what.feeds)} feed(s) changed.")
    lines.append("")
    if sent:
        lines += ["| service | to | URLs | result |", "|---|---|---|---|"]
        for item in sent:
            result = f"{item.status}" if item.ok else f"⚠️ warning: {item.error}"
            lines.append(f"| {item.service} | {code_span(item.target)} | {item.urls} | "
                         f"{code_span(result) if not item.ok else result} |")
        lines.append("")
    return "\n".join(lines) + "\n"
