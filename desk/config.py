"""Site configuration: `[tool.desk]` in pyproject.toml, overridden by CLI flags.

The Config is frozen and passed explicitly to whatever needs it; desk has no module-level
settings.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from desk.segments import check_segment

# Where templates/ and static/ live when the project folder has none of its own.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


class ConfigError(Exception):
    """The configuration file or a flag holds a value desk cannot use."""


class Config(BaseModel):
    """Everything a build needs to know besides the content itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = "https://hangingcontext.com"
    title: str = "Hanging Context"
    description: str = "Agent-written, source-cited news."
    language: str = "en"
    content_dir: Path = Path("content")
    output_dir: Path = Path("public")
    templates_dir: Path = PACKAGE_ROOT / "templates"
    static_dir: Path = PACKAGE_ROOT / "static"
    cache_dir: Path = Path(".desk-cache")
    newsrooms: dict[str, str] = Field(default_factory=dict)
    page_size: int = Field(default=20, ge=1)
    feed_size: int = Field(default=50, ge=1)
    news_window_hours: float = Field(default=48, gt=0)
    edition_gap_hours: float = Field(default=24, gt=0)
    publication_name: str | None = None
    search: bool = True
    reuse: dict[str, str] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _absolute_http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("base_url must be an absolute http(s) URL")
        if parts.query or parts.fragment:
            raise ValueError("base_url may not have a query or fragment")
        return value.rstrip("/")

    @field_validator("newsrooms")
    @classmethod
    def _newsroom_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            check_segment(key)
        return value

    @property
    def base_path(self) -> str:
        """The path part of base_url without its trailing slash ('' at a domain's root)."""
        return urlsplit(self.base_url).path.rstrip("/")

    @property
    def site_name(self) -> str:
        """The publication name used by Google News and feeds."""
        return self.publication_name or self.title


class CacheControl(BaseModel):
    """The Cache-Control header `desk deploy` gives each kind of file (see desk.kinds)."""

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


def find_project_file(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.desk] table, from start upwards."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError):
                continue
            if "desk" in data.get("tool", {}):
                return candidate
    return None


def load_config(
    project_file: Path | None = None, overrides: dict[str, Any] | None = None
) -> Config:
    """Read [tool.desk] from project_file (or the nearest one) and apply overrides.

    Relative folders in the file are relative to the file's folder; those given as
    overrides are taken as they are (relative to the working directory).
    """
    if project_file is None:
        project_file = find_project_file(Path.cwd())
    values: dict[str, Any] = {}
    if project_file is not None:
        values = _desk_table(project_file)
        values.pop("deploy", None)  # read by load_deploy_config
        root = project_file.parent
        for key in ("content_dir", "output_dir", "templates_dir", "static_dir", "cache_dir"):
            if key in values:
                values[key] = _relative_to_cwd(root / values[key])
        for key, folder in (("templates_dir", "templates"), ("static_dir", "static")):
            if key not in values and (root / folder).is_dir():
                values[key] = _relative_to_cwd(root / folder)
        if "content_dir" not in values:
            values["content_dir"] = _relative_to_cwd(root / "content")
        if "output_dir" not in values:
            values["output_dir"] = _relative_to_cwd(root / "public")
        if "cache_dir" not in values:
            values["cache_dir"] = _relative_to_cwd(root / ".desk-cache")
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    try:
        return Config.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_problems(exc, project_file, "tool.desk")) from None


def load_deploy_config(project_file: Path | None = None) -> DeployConfig:
    """Read [tool.desk.deploy] from project_file (or the nearest one); defaults without."""
    if project_file is None:
        project_file = find_project_file(Path.cwd())
    values = _desk_table(project_file).get("deploy", {}) if project_file else {}
    try:
        return DeployConfig.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(_problems(exc, project_file, "tool.desk.deploy")) from None


def _desk_table(project_file: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(project_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{project_file}: {exc}") from None
    return dict(data.get("tool", {}).get("desk", {}))


def _problems(exc: ValidationError, project_file: Path | None, table: str) -> str:
    where = str(project_file) if project_file else "configuration"
    return "\n".join(
        f"{where}: {table}.{'.'.join(str(p) for p in err['loc'])}: {_clean(err['msg'])}"
        for err in exc.errors()
    )


def _relative_to_cwd(path: Path) -> Path:
    """Shorter paths in messages: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _clean(message: str) -> str:
    return message.removeprefix("Value error, ")
