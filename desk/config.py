"""Site configuration: a `desk.toml`, or `[tool.desk]` in pyproject.toml, overridden by CLI
flags.

The Config is frozen and passed explicitly to whatever needs it; desk has no module-level
settings.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Collection
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from desk.content.models import check_url
from desk.content.segments import check_segment

# A site's own configuration file; a pyproject.toml with a [tool.desk] table works too.
CONFIG_FILE = "desk.toml"
PYPROJECT = "pyproject.toml"
# IndexNow's rule for a key: 8 to 128 of a-z, A-Z, 0-9 and '-'.
_INDEXNOW_KEY = re.compile(r"[A-Za-z0-9-]{8,128}")
# desk names its staging folders (`.NAME.desk-search-` and 12 hex digits, beside the output
# folder) and its build-cache files (`NAME-` 12 hex digits `.sqlite.tmp-journal`) after the
# output folder's NAME, with up to 32 bytes more: with a file system's 255 bytes a name,
# the output folder's own name is at most this long.
MAX_OUTPUT_NAME_BYTES = 255 - 32
# The flags that override a setting for one run, named in messages about their values.
FLAGS = {"base_url": "--base-url", "content_dir": "--content", "output_dir": "--out",
         "cache_dir": "--cache-dir"}
# The machine uses reuse terms may permit or prohibit: RSL 1.0's usage tokens.
USAGES = ("all", "ai-all", "ai-train", "ai-input", "ai-index", "search")
USAGE_KEYS = ("permits", "prohibits")
BASE_URL_REQUIRED = ("required: the absolute URL the site is published at, "
                     "e.g. https://news.example.org")


class ConfigError(Exception):
    """The configuration file or a flag holds a value desk cannot use."""


class Editor(BaseModel):
    """A newsroom's editor in charge: the person who answers for what it publishes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    url: str | None = None  # a page about them, e.g. an About section

    @field_validator("url")
    @classmethod
    def _page_url(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)


class Config(BaseModel):
    """Everything a build needs to know besides the content itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # No default: a site that forgot it would publish someone else's URLs.
    base_url: str
    title: str = Field(default="", description="default: base_url's host name")
    description: str = "Agent-written, source-cited news."
    language: str = "en"
    content_dir: Path = Path("content")
    output_dir: Path = Path("public")
    # The site's own templates and static files; each file overrides desk's of that name.
    templates_dir: Path = Path("templates")
    static_dir: Path = Path("static")
    cache_dir: Path = Path(".desk-cache")
    newsrooms: dict[str, str] = Field(default_factory=dict)
    beats: dict[str, str] = Field(default_factory=dict)  # beat titles, by beat
    # Each newsroom's editor in charge, by newsroom: named on its stories (JSON-LD's
    # accountablePerson) whether or not a person reviewed them.
    editors: dict[str, Editor] = Field(default_factory=dict)
    # False: a story without a review record is an error (`desk check` refuses it,
    # `desk build --hold-back` holds it back), for a desk whose every story a person reviews.
    publish_unreviewed: bool = True
    page_size: int = Field(default=20, ge=1)
    feed_size: int = Field(default=50, ge=1)
    # URLs in one sitemap file at most (the protocol's limit): a site with more gets an
    # index of parts, by month (see desk.render.sitemaps).
    sitemap_max_urls: int = Field(default=50_000, ge=1, le=50_000)
    news_window_hours: float = Field(default=48, gt=0)
    edition_gap_hours: float = Field(default=24, gt=0)
    # The largest image file a story may name in the content, in bytes and in pixels (a
    # small file may declare a huge image: it is refused from its header, never decoded).
    image_max_bytes: int = Field(default=30_000_000, ge=1)
    image_max_pixels: int = Field(default=60_000_000, ge=1)
    # A published original keeps its location (GPS) and camera data (EXIF, XMP, IPTC):
    # off, as news desks protect where a photo was taken (see desk.render.originals).
    keep_image_metadata: bool = False
    publication_name: str | None = None
    search: bool = True
    # Pages per Pagefind run (its memory grows with them: about 0.35 MB a story page) and
    # the new or edited stories indexed again every build before they are sealed (see
    # desk.search.bundles). Neither changes any page. 1,000 pages (about 350 MB) keep a sealing
    # hour's publish of a 100,000-story archive, desk included, under 1 GB.
    search_bundle_pages: int = Field(default=1000, ge=1)
    search_fresh_pages: int = Field(default=250, ge=0)
    # The reuse terms, the one source of /terms/reuse/, reuse.json, the RSL licence file
    # and robots.txt's licence lines (desk.render.licence): texts, and the machine uses
    # the terms permit and prohibit (`permits`, `prohibits`: RSL usage tokens).
    reuse: dict[str, str | tuple[str, ...]] = Field(default_factory=dict)
    # A published story whose text changed since its last publish with no new change
    # record (desk.content.edits): a warning, or an error that refuses it (held back by
    # `--hold-back`).
    silent_edits: Literal["warning", "error"] = "warning"
    # Announcing (desk announce): the IndexNow key, which the site serves at /{key}.txt so
    # that search engines trust its submissions, and the WebSub hub every feed names. They
    # shape the site, so they live here; the rest is [announce] (AnnounceConfig).
    indexnow_key: str | None = None
    websub_hub: str | None = None
    # A deploy preview (desk build --preview): a banner and noindex on every page, a
    # robots.txt that disallows everything, and nothing announced.
    preview: bool = False

    @model_validator(mode="before")
    @classmethod
    def _title_from_host(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("title") and isinstance(
                data.get("base_url"), str):
            host = urlsplit(data["base_url"]).hostname
            if host:
                data = {**data, "title": host}
        return data

    @field_validator("base_url")
    @classmethod
    def _absolute_http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http(s) URL")
        check_url(value)  # every page's links and a story's index.json are made from it
        if parts.query or parts.fragment:
            raise ValueError("base_url may not have a query or fragment")
        return value.rstrip("/")

    @field_validator("indexnow_key")
    @classmethod
    def _indexnow_key(cls, value: str | None) -> str | None:
        if value is not None and not _INDEXNOW_KEY.fullmatch(value):
            raise ValueError("an IndexNow key is 8 to 128 characters of a-z, A-Z, 0-9 and '-'")
        return value

    @field_validator("output_dir")
    @classmethod
    def _output_name(cls, value: Path) -> Path:
        size = len(value.name.encode("utf-8", "surrogateescape"))
        if size > MAX_OUTPUT_NAME_BYTES:
            raise ValueError(f"the folder's name is {size:,} bytes long; at most "
                             f"{MAX_OUTPUT_NAME_BYTES} (desk names its staging folders and "
                             "cache files after it, and a file system holds 255 bytes a name)")
        return value

    @field_validator("websub_hub")
    @classmethod
    def _hub_url(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)

    @field_validator("reuse")
    @classmethod
    def _reuse_terms(cls, value: dict[str, str | tuple[str, ...]]
                     ) -> dict[str, str | tuple[str, ...]]:
        for key, given in value.items():
            if key in USAGE_KEYS:
                if not isinstance(given, tuple):
                    raise ValueError(f"{key} is a list of uses, e.g. [\"search\", \"ai-input\"]")
                unknown = [token for token in given if token not in USAGES]
                if unknown:
                    raise ValueError(f"{key}: {', '.join(map(repr, unknown))} is not a use "
                                     f"RSL names (one of {', '.join(USAGES)})")
            elif not isinstance(given, str):
                raise ValueError(f"{key} is a text")
        both = set(value.get("permits", ())) & set(value.get("prohibits", ()))
        if both:
            raise ValueError(f"{', '.join(sorted(both))} both permitted and prohibited")
        return value

    @field_validator("newsrooms", "beats", "editors")
    @classmethod
    def _newsroom_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in value:
            check_segment(key)
        return value

    @property
    def base_path(self) -> str:
        """The path part of base_url without its trailing slash ('' at a domain's root)."""
        return urlsplit(self.base_url).path.rstrip("/")

    @property
    def feed_hub(self) -> str:
        """The WebSub hub the feeds name: '' without one, and in a preview (never announced)."""
        return "" if self.preview or self.websub_hub is None else self.websub_hub

    @property
    def key_file(self) -> str:
        """The IndexNow key the site serves as /{key}.txt: '' without one, and in a preview."""
        return "" if self.preview or self.indexnow_key is None else self.indexnow_key

    @property
    def site_name(self) -> str:
        """The publication name used by Google News and feeds."""
        return self.publication_name or self.title


class CacheControl(BaseModel):
    """The Cache-Control header `desk deploy` gives each kind of file (see desk.render.kinds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    asset: str = "public, max-age=31536000, immutable"  # content-hashed names
    static: str = "public, max-age=3600"
    story: str = "public, max-age=300"
    search: str = "public, max-age=300"
    list: str = "public, max-age=300"
    feed: str = "public, max-age=300"


class DeployConfig(BaseModel):
    """`[tool.desk.deploy]`: how `desk deploy` updates the bucket.

    Kept apart from Config so that changing it never invalidates a build's memory.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_deletes: int = Field(default=1000, ge=0)
    # Replaced content-hashed files stay this long for pages still in caches (pages are
    # cached five minutes by default; publishes come hourly).
    keep_replaced_minutes: float = Field(default=30, ge=0)
    cache_control: CacheControl = Field(default_factory=CacheControl)
    # Key prefixes below the target that a deploy never lists, uploads or deletes: the
    # deploy previews live there, beside the site (desk makes no such folder).
    leave: tuple[str, ...] = ("previews/",)

    @field_validator("leave")
    @classmethod
    def _folders(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in value:
            parts = prefix.strip("/").split("/")
            if not prefix.strip("/") or any(p in ("", ".", "..") for p in parts):
                raise ValueError(f"{prefix!r} is not a folder below the target, e.g. "
                                 "\"previews/\"")
        return tuple(prefix.strip("/") + "/" for prefix in value)


class AnnounceConfig(BaseModel):
    """`[announce]` (`[tool.desk.announce]`): where `desk announce` submits what a publish
    changed. Kept apart from Config so that changing it never makes a build render anything."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # e.g. https://api.indexnow.org/indexnow (it shares submissions with the other engines);
    # IndexNow is off without it or without indexnow_key.
    indexnow_endpoint: str | None = None
    # Every request of one announce together, so that a hub that never answers cannot hold
    # up a publish.
    time_limit_seconds: float = Field(default=30, gt=0, le=600)

    @field_validator("indexnow_endpoint")
    @classmethod
    def _endpoint_url(cls, value: str | None) -> str | None:
        return None if value is None else check_url(value)


def find_project_file(start: Path) -> Path | None:
    """The nearest desk.toml, or pyproject.toml with a [tool.desk] table, from start
    upwards (in one folder, desk.toml first)."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
        candidate = folder / PYPROJECT
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError):
                continue
            if "desk" in data.get("tool", {}):
                return candidate
    return None


def _read_settings(project_file: Path) -> tuple[dict[str, Any], str]:
    """The settings in a file and the prefix its keys are named with in messages: a
    pyproject.toml's [tool.desk] table, or the whole of any other file (desk.toml)."""
    try:
        data = tomllib.loads(project_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{project_file}: {exc}") from None
    if project_file.name == PYPROJECT:
        return dict(data.get("tool", {}).get("desk", {})), "tool.desk."
    return data, ""


def load_config(
    project_file: Path | None = None, overrides: dict[str, Any] | None = None
) -> Config:
    """Read the settings of project_file (or of the nearest one) and apply overrides.

    Relative folders in the file are relative to the file's folder; those given as
    overrides are taken as they are (relative to the working directory).
    """
    if project_file is None:
        project_file = find_project_file(Path.cwd())
    values: dict[str, Any] = {}
    prefix = ""
    if project_file is not None:
        values, prefix = _read_settings(project_file)
        values.pop("deploy", None)  # read by load_deploy_config
        values.pop("announce", None)  # read by load_announce_config
        root = project_file.parent
        defaults = {"content_dir": "content", "output_dir": "public", "cache_dir": ".desk-cache",
                    "templates_dir": "templates", "static_dir": "static"}
        for key, folder in defaults.items():
            given = values.get(key, folder)
            if isinstance(given, str):  # anything else is reported by the validation
                values[key] = _relative_to_cwd(root / given)
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    values.update(given)
    try:
        return Config.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, project_file, prefix, set(given))) from None


def _describe(exc: ValidationError, project_file: Path | None, prefix: str,
              given: Collection[str] = ()) -> str:
    """One line per problem: FILE: KEY: what is wrong (or FLAG: what is wrong, for a value
    a flag gave)."""
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        missing_url = err["type"] == "missing" and key == "base_url"
        message = BASE_URL_REQUIRED if missing_url else _clean(err["msg"])
        if key in given:
            lines.append(f"{FLAGS.get(key, key)}: {message}")
        elif project_file is None and missing_url:
            lines.append(f"no {CONFIG_FILE} (or {PYPROJECT} with [tool.desk]) here or in a "
                         f"parent folder: base_url is {message} (`desk init DIR` starts a "
                         "site; --base-url gives it for one run)")
        else:
            lines.append(f"{project_file or 'configuration'}: {prefix}{key}: {message}")
    return "\n".join(lines)


_Table = TypeVar("_Table", bound=BaseModel)


def load_deploy_config(project_file: Path | None = None) -> DeployConfig:
    """Read the deploy settings ([tool.desk.deploy], or [deploy] in desk.toml) from
    project_file (or the nearest one); defaults without."""
    return _table(project_file, "deploy", DeployConfig)


def load_announce_config(project_file: Path | None = None) -> AnnounceConfig:
    """Read the announce settings ([tool.desk.announce], or [announce] in desk.toml) from
    project_file (or the nearest one); defaults without."""
    return _table(project_file, "announce", AnnounceConfig)


def _table(project_file: Path | None, name: str, model: type[_Table]) -> _Table:
    """One table of the settings, validated by model (ConfigError naming each problem)."""
    if project_file is None:
        project_file = find_project_file(Path.cwd())
    values: dict[str, Any] = {}
    prefix = ""
    if project_file is not None:
        settings, prefix = _read_settings(project_file)
        values = settings.get(name, {})
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, project_file, f"{prefix}{name}.")) from None


def _relative_to_cwd(path: Path) -> Path:
    """Shorter paths in messages: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _clean(message: str) -> str:
    return message.removeprefix("Value error, ")
