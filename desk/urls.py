"""The site's URL layout, in one place.

Every URL path desk produces starts and ends with '/' (a folder served by its index file)
or names a file. Output file paths are derived from URL paths, never the other way round,
and every segment is checked so no file can land outside the output folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence
from functools import lru_cache
from pathlib import PurePosixPath
from urllib.parse import quote, urlsplit

from desk.config import Config
from desk.content.segments import check_edition, check_segment

HOME = "/"
NEWSROOMS = "/n/"
EDITIONS = "/editions/"
AGENTS = "/agents/"
CORRECTIONS = "/corrections/"
REUSE_TERMS = "/terms/reuse/"
REUSE_JSON = "/.well-known/reuse.json"
# The reuse terms as an RSL 1.0 licence file (served as application/rsl+xml).
LICENCE = "/license.xml"
# The publisher and its policies, in JSON-LD (schema.org NewsMediaOrganization).
PUBLISHER_JSON = "/.well-known/publisher.json"
URL_HISTORY = "/.well-known/desk-urls.json"
# The JSON Schemas of the content's files (desk.content.schema): a story, a withdrawal,
# a page's front matter. The name carries the format's version (hangingcontext.desk/1).
SCHEMAS = "/schema/"
STORY_SCHEMA = SCHEMAS + "desk-1.json"
WITHDRAWAL_SCHEMA = SCHEMAS + "desk-1-withdrawal.json"
PAGE_SCHEMA = SCHEMAS + "desk-1-page.json"
NOT_FOUND = "/404.html"
ROBOTS = "/robots.txt"
SITEMAP = "/sitemap.xml"
NEWS_SITEMAP = "/news-sitemap.xml"
LLMS = "/llms.txt"
SEARCH = "/search/"
PAGEFIND = "/pagefind/"
# The search bundles to merge (a list page: deployed after the bundles it names).
SEARCH_BUNDLES = "/search/bundles.json"
LLMS_FULL = "/llms-full.txt"
MEDIA = "/media/"  # the content's images, their variants and crops
FEED_RSS = "feed.xml"
FEED_ATOM = "atom.xml"
FEED_JSON = "feed.json"
# The year in feed entry ids (tag URIs name a date at which the site owned its host).
ENTRY_ID_YEAR = "2026"


def story_path(published_date: str, slug: str) -> str:
    """`/stories/YYYY-MM-DD/SLUG/`, the date being the UTC date of publication."""
    if not _is_date(published_date):
        raise ValueError(f"{published_date!r} is not a YYYY-MM-DD date")
    return f"/stories/{published_date}/{check_segment(slug)}/"


# The first segments of desk's own pages: no page of the content may take them.
RESERVED = frozenset({"stories", "n", "editions", "terms", "search", "pagefind", "static",
                      "corrections", "agents", "schema"})


def page_path(parts: tuple[str, ...]) -> str:
    """`/SEGMENT/.../` of a page of the content, from its file's place below the pages
    folder (`about` is `/about/`); a first segment of desk's own pages is refused."""
    if not parts:
        raise ValueError("a page needs a name")
    for part in parts:
        check_segment(part)
    if parts[0] in RESERVED:
        raise ValueError(f"/{parts[0]}/ is where desk puts its own pages "
                         f"({', '.join(sorted(RESERVED))} are taken): name the page otherwise")
    return "/" + "/".join(parts) + "/"


def key_file_path(key: str) -> str:
    """`/KEY.txt`, the IndexNow key file (the settings check the key: letters, digits
    and '-' only, so it is one safe segment)."""
    if not key or not key.replace("-", "").isalnum() or not key.isascii():
        raise ValueError(f"{key!r} is not an IndexNow key")
    return f"/{key}.txt"


def newsroom_path(newsroom: str, page: int = 0) -> str:
    """`/n/NEWSROOM/`, and `/n/NEWSROOM/page/N/` for its archive pages (N from 1, the
    oldest)."""
    return _paged(f"/n/{check_segment(newsroom)}/", page)


def beat_path(newsroom: str, beat: str, page: int = 0) -> str:
    """`/n/NEWSROOM/beats/BEAT/`, and `.../page/N/` for its archive pages."""
    return _paged(f"{newsroom_path(newsroom)}beats/{check_segment(beat)}/", page)


def agent_path(agent: str, page: int = 0) -> str:
    """`/agents/AGENT/`, and `/agents/AGENT/page/N/` for its archive pages."""
    return _paged(f"{AGENTS}{check_segment(agent)}/", page)


def corrections_path(page: int = 0) -> str:
    """`/corrections/`, and `/corrections/page/N/` for its archive pages."""
    return _paged(CORRECTIONS, page)


def edition_path(edition: str) -> str:
    """`/editions/EDITION/`."""
    return f"/editions/{check_edition(edition)}/"


def editions_index_path(page: int = 0) -> str:
    """`/editions/`, and `/editions/page/N/` for its archive pages (N from 1, the
    oldest)."""
    return _paged(EDITIONS, page)


def feed_path(kind: str, newsroom: str | None = None) -> str:
    """A feed file, site-wide or for one newsroom."""
    folder = HOME if newsroom is None else newsroom_path(newsroom)
    return folder + kind


def media_path(source: str, digest: str, variant: str) -> str:
    """`/media/NAME.HASH.VARIANT`: a file made from the content's image at `source` (its
    path below the content folder), named by its file name (letters and digits, '-'
    between) and the first 12 hex digits of the sha256 of its bytes; `variant` is the
    extension, after what sets the variant apart (`960w.webp`, `16x9.jpg`, `jpg`)."""
    if not re.fullmatch(r"[0-9a-f]{12,}", digest) or not re.fullmatch(
            r"(?:[0-9]+(?:w|x[0-9]+)\.)?[a-z]+", variant):
        raise ValueError(f"not a media file name: {digest!r}, {variant!r}")
    stem = re.sub(r"[^a-z0-9]+", "-", PurePosixPath(source).stem.lower()).strip("-")
    return f"{MEDIA}{stem[:60].strip('-') or 'image'}.{digest[:12]}.{variant}"


def feed_in(folder: str, kind: str) -> str:
    """A feed file in a list page's folder (a beat's, the corrections log's)."""
    if not plain_folder(folder):
        raise ValueError(f"{folder!r} is not a site folder")
    return folder + kind


def _paged(first: str, page: int) -> str:
    if page < 0:
        raise ValueError("archive pages start at 1 (0 is the latest page)")
    return first if page == 0 else f"{first}page/{page}/"


def _is_date(value: str) -> bool:
    return (
        len(value) == 10
        and value[4] == value[7] == "-"
        and (value[:4] + value[5:7] + value[8:]).isdigit()
    )


def absolute(config: Config, path: str) -> str:
    """The absolute URL of a site path, under the configured base URL."""
    return config.base_url + path


def href(config: Config, path: str) -> str:
    """A root-relative link to a site path, honouring a base URL with a path part."""
    return config.base_path + path


def entry_id(config: Config, story_id: str) -> str:
    """A story's feed entry id (Atom id, RSS guid, JSON Feed id): a tag URI (RFC 4151) of
    the site's host and the story id, so it stays the same wherever the story moves."""
    host = urlsplit(config.base_url).hostname or "localhost"
    return f"tag:{host},{ENTRY_ID_YEAR}:stories/{quote(story_id, safe='')}"


def correction_entry_id(config: Config, story_id: str, at: str) -> str:
    """A correction's entry id in the corrections feeds: a tag URI of the story id and the
    correction's time (RFC 3339)."""
    host = urlsplit(config.base_url).hostname or "localhost"
    return f"tag:{host},{ENTRY_ID_YEAR}:corrections/{quote(story_id, safe='')}/{at}"


def internal_story_path(url: str, config: Config, story_url: str | None = None) -> str | None:
    """The site path a URL points at when it is a story URL of this site, else None.

    URLs under base_url count, and so do URLs on the host of the story's own `url`, so a
    staging build still recognises links written for the production host.
    """
    # Most links are written as base_url gives them: those are read without parsing
    # (a build from a saved state reads 400,000 of them at 100,000 stories).
    prefix = _site_prefix(config.base_url)
    if prefix is not None and url.startswith(prefix) and not _UNUSUAL.search(url):
        path = url[len(prefix) - 1:]
        return path if path.startswith("/stories/") else None
    # So are those on another host, when that plain: every link, in the preview, whose
    # base URL is its own (it reads them all as it starts, and where each leads on every
    # save). Such a link leads to a story only on the story's own host.
    found = _plain_origin(url)
    if found is not None and found[1] != _netloc(config.base_url):
        if story_url is None:
            return None
        own = _plain_origin(story_url)
        if own is not None:
            path = url[len(found[0]):]
            return path if own[1] == found[1] and path.startswith("/stories/") else None
    return parsed_story_path(url, config, story_url)


def internal_story_paths(links: Iterable[str], config: Config, story_url: str | None
                         ) -> list[str | None]:
    """internal_story_path of each of a story's links, the story's own host read once: a
    link on that host, written plainly as a real archive's are, is cut where its path
    begins, not read as a URL (desk serve, whose base URL is its own, reads 400,000
    such links as it starts at 100,000 stories)."""
    own = _plain_origin(story_url) if story_url is not None else None
    if own is None or own[1] == _netloc(config.base_url):
        return [internal_story_path(url, config, story_url) for url in links]
    head, cut = own[0] + "/", len(own[0])
    return [(url[cut:] if url.startswith("/stories/", cut) else None)
            if url.startswith(head) and not _UNUSUAL.search(url)
            else internal_story_path(url, config, story_url) for url in links]


def _plain_origin(url: str) -> tuple[str, str] | None:
    """A URL's origin ("https://host") and host, when it begins so and holds nothing a
    URL parser reads otherwise (None: parse it)."""
    parts = url.split("/", 3)
    if len(parts) < 4 or _UNUSUAL.search(url):
        return None
    return _origin_host("/".join(parts[:3]))


@lru_cache(maxsize=64)
def _origin_host(origin: str) -> tuple[str, str] | None:
    """An origin and its host as a URL parser reads them, if it reads it as written."""
    parts = urlsplit(origin + "/")
    if not parts.netloc or f"{parts.scheme}://{parts.netloc}" != origin:
        return None
    return origin, parts.netloc


@lru_cache(maxsize=8)
def _netloc(url: str) -> str:
    return urlsplit(url).netloc


def written_story_path(url: str) -> str | None:
    """The story path a link names as written, without parsing: the one
    internal_story_path gives for it whenever it gives one, under a base_url whose path
    names no "/stories/" (the caller's to check). None when it names none, or when a
    parser would read it otherwise than as written (it drops tabs and line breaks)."""
    if _BREAKS.search(url):
        return None
    found = _WRITTEN_STORY.search(url)
    return found.group() if found is not None else None


def story_links_reader(config: Config, stories: Container[str]
                       ) -> Callable[[str], str | None] | None:
    """written_story_path, quicker for a link written as base_url gives the URL of one of
    these `stories` (their site paths): it is cut where the path begins, not searched (a
    build reads 400,000 links at 100,000 stories). A story's path holds none of the
    characters a parser reads otherwise, so such a link names that path and no other.
    None when links cannot be read as written: a base path naming "/stories/" makes a
    link's written path another than the one it leads to."""
    if not _read_as_written(config):
        return None
    head = _story_link_head(config)
    if head is None:
        return written_story_path
    cut = len(head)

    def read(url: str) -> str | None:
        if url.startswith(head):
            path = url[cut:]
            if path in stories:
                return path
        return written_story_path(url)

    return read


def written_story_links(config: Config, stories: Iterable[str]) -> frozenset[str]:
    """The links written as base_url gives the URL of each of these `stories` (their site
    paths): story_links_reader reads each as its story's path, so a story whose every
    link is one of them is told by one set test, not a read a link (a build tests
    400,000 links at 100,000 stories). Empty when links are not cut so."""
    head = _story_link_head(config)
    if head is None or not _read_as_written(config):
        return frozenset()
    return frozenset([head + path for path in stories])


def _read_as_written(config: Config) -> bool:
    """Whether a link's written story path is the one it leads to: not under a base path
    naming "/stories/"."""
    return "/stories/" not in config.base_path + "/"


def _story_link_head(config: Config) -> str | None:
    """What a link written as base_url gives a URL has before the path ("https://host/base"),
    when base_url is that plain (None: links are searched or parsed)."""
    prefix = _site_prefix(config.base_url)
    return None if prefix is None else prefix[:-1]


def may_lead_to(url: str, paths: Container[str],
                read: Callable[[str], str | None] = written_story_path) -> bool:
    """Whether a link may lead to one of these story paths: never False when
    internal_story_path gives one of them for it (see written_story_path; `read`: it, or
    a story_links_reader)."""
    path = read(url)
    return path in paths if path is not None else _BREAKS.search(url) is not None


def parsed_story_path(url: str, config: Config, story_url: str | None = None) -> str | None:
    """internal_story_path, every URL parsed."""
    parts = urlsplit(url)
    base = urlsplit(config.base_url)
    path = parts.path
    if parts.netloc == base.netloc and config.base_path:
        if not path.startswith(config.base_path + "/"):
            return None
        path = path[len(config.base_path):]
    elif parts.netloc != base.netloc and (
        story_url is None or parts.netloc != urlsplit(story_url).netloc
    ):
        return None
    return path if path.startswith("/stories/") else None


# What a URL parser reads otherwise than as plain path characters (it drops tabs and
# line breaks anywhere).
_UNUSUAL = re.compile(r"[?#\t\r\n]")
_BREAKS = re.compile(r"[\t\r\n]")
# A story path as written in a URL: the first "/stories/" on, up to a query or fragment;
# not one right after a slash, which begins a host named "stories" ("https://stories/").
_WRITTEN_STORY = re.compile(r"(?<!/)/stories/[^?#]*")


@lru_cache(maxsize=8)
def _site_prefix(base_url: str) -> str | None:
    """What a URL below base_url begins with ("https://host/base/"), when it is that
    plain (None: every URL is parsed)."""
    parts = urlsplit(base_url)
    if parts.query or parts.fragment or _UNUSUAL.search(base_url) or not parts.netloc:
        return None
    return f"{base_url.rstrip('/')}/"


def relative_file(path: str) -> str:
    """A URL path as a safe relative file path (raises ValueError on '..' and the like)."""
    if path.endswith("/"):
        path += "index.html"
    # Most paths are plain (no segment to drop or refuse): told without pathlib, which
    # took half a second of reading the index's 100,000 file names.
    plain = path.split("/")
    if len(plain) > 1 and plain[0] == "" and all(
            p not in ("", ".", "..") and "\\" not in p and "\x00" not in p for p in plain[1:]):
        return path[1:]
    pure = PurePosixPath(path)
    if not pure.is_absolute():
        raise ValueError(f"site path {path!r} must start with '/'")
    parts = pure.parts[1:]
    if not parts or any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in parts):
        raise ValueError(f"unsafe site path {path!r}")
    return "/".join(parts)


# The files a unit usually has in its folder, by their count: a story's, a list page's.
# The build cache and the writer note such a unit by its folder, not by its files' names.
USUAL_FILES = {3: ("index.html", "index.md", "index.json"), 2: ("index.html", "index.json")}


def plain_folder(path: str) -> bool:
    """A quick test that a URL path is a site folder (/, or /SEGMENT/.../) whose files
    stay inside the site: no segment empty or starting with a dot, no backslash or NUL.
    (Some safe folders fail it; relative_file decides for those.)"""
    return (path[:1] == "/" and path[-1:] == "/" and "//" not in path
            and "/." not in path and "\\" not in path and "\x00" not in path)


def plain_folders(paths: Sequence[str], under: str = "/") -> bool:
    """plain_folder of every path, each below `under` (a folder), told at once by a few
    searches of C speed over them all, each path on a line of its own (the state's
    reader tells it of 155,000 units' folders on every build): every line starts with
    `under` and ends with "/", and none holds "//", "/.", a backslash or NUL (False, too,
    for a path that holds a line break)."""
    if not paths:
        return True
    text = "\n".join(paths) + "\n"
    count = len(paths)
    return (text.startswith(under) and text.count("\n") == count
            and text.count("/\n") == count and text.count("\n" + under) == count - 1
            and not any(part in text for part in ("//", "/.", "\\", "\x00")))


def usual_count(folder: str, files: tuple[str, ...]) -> int:
    """The count of a unit's files when they are the usual ones in its folder, else 0."""
    count = len(files)
    if (count in USUAL_FILES and plain_folder(folder)
            and files == tuple(folder[1:] + name for name in USUAL_FILES[count])):
        return count
    return 0


def sitemap_part(name: str) -> str:
    """A part of a large site's sitemap, which sitemap.xml indexes."""
    return f"/sitemap-{name}.xml"


# The part of a large site's sitemap that lists the pages of no month (newsrooms, beats...).
SITEMAP_OTHERS = "pages"
# A story's or an edition's page, and the month it is of.
_MONTHLY = re.compile(r"/(stories|editions)/([0-9]{4}-[0-9]{2})-")
# How much of a path sitemap_part_of reads: "/editions/YYYY-MM-" at most.
SITEMAP_PART_HEAD = 18


def sitemap_part_of(path: str) -> str:
    """The part of a large site's sitemap that lists a page: the stories of a month
    ("stories-2026-11"), the editions of a month ("editions-2026-11"), or the others."""
    found = _MONTHLY.match(path)
    return f"{found[1]}-{found[2]}" if found else SITEMAP_OTHERS
