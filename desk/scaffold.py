"""`desk init`: a new content repository, ready to preview, build and publish.

The starter files ship in the package (desk/starter); the settings file and the pin of
desk are written for the new site.
"""

from __future__ import annotations

import json
import tomllib
from importlib import metadata, resources
from pathlib import Path
from string import Template

from pydantic import ValidationError

from desk import urls
from desk.config import CONFIG_FILE, Config
from desk.render.theme import shipped

EXAMPLE_STORY = "content/stories/2026-11-14/inference-throughput-race-kimi-deepseek.json"
# Target in the new site: starter file (copied as it is, or filled in when a Template).
_STARTER = {
    EXAMPLE_STORY: "story.json",
    ".github/workflows/publish.yml": "publish.yml",
    ".github/workflows/check.yml": "check.yml",
    ".gitignore": "gitignore",
    # The newsroom's own pages: a start for the About and the corrections policy.
    "content/pages/about.md": "about.md",
    "content/pages/policies/corrections.md": "corrections.md",
}

# VS Code's settings for the new site: which published schema checks which content file
# (editors that read `$schema` in a file, or SchemaStore, need nothing).
EDITOR_SETTINGS = ".vscode/settings.json"
STORY_FILES = ("content/stories/**/*.json", "content/drafts/**/*.json")
WITHDRAWAL_FILES = ("content/withdrawn/*.json",)


class ScaffoldError(Exception):
    """The new site cannot be made where or as asked."""


def scaffold(folder: Path, base_url: str, title: str | None = None) -> list[Path]:
    """Write a new site into folder (which must be new or empty); the files written."""
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ScaffoldError(f"{folder}: not an empty folder; desk init only writes into a "
                            "new or empty one")
    try:
        config = Config.model_validate({"base_url": base_url, "title": title or ""})
    except ValidationError as exc:
        raise ScaffoldError("; ".join(f"{'.'.join(map(str, e['loc']))}: "
                                      f"{e['msg'].removeprefix('Value error, ')}"
                                      for e in exc.errors())) from None
    settings = settings_text(config)
    # What is written must be what desk reads back.
    read_back = tomllib.loads(settings)
    if (read_back["base_url"], read_back["title"]) != (config.base_url, config.title):
        raise ScaffoldError("the title cannot be written to desk.toml as it is")
    starter = resources.files("desk").joinpath("starter")
    readme = Template(starter.joinpath("README.md").read_text(encoding="utf-8"))
    files: dict[str, bytes] = {
        CONFIG_FILE: settings.encode("utf-8"),
        "README.md": readme.substitute(title=config.title, base_url=config.base_url).encode(),
        "requirements.txt": requirements_text().encode("utf-8"),
    }
    files[EDITOR_SETTINGS] = editor_settings(config).encode("utf-8")
    for target, name in _STARTER.items():
        files[target] = starter.joinpath(name).read_bytes()
    written = []
    for target, data in files.items():
        path = folder / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        written.append(path)
    return written


def editor_settings(config: Config) -> str:
    """.vscode/settings.json: the story and withdrawal files mapped to their schemas."""
    mapping = [
        {"fileMatch": list(STORY_FILES), "url": urls.absolute(config, urls.STORY_SCHEMA)},
        {"fileMatch": list(WITHDRAWAL_FILES),
         "url": urls.absolute(config, urls.WITHDRAWAL_SCHEMA)},
    ]
    return json.dumps({"json.schemas": mapping}, indent=2) + "\n"


def settings_text(config: Config) -> str:
    """The new site's desk.toml."""
    starter_summary = (f"Free to read, quote and summarise. Credit {config.title} and link "
                       "to the story.")
    return f"""\
# desk's settings for this site; `desk build -h` lists the flags that override them.
base_url = {toml_string(config.base_url)}
title = {toml_string(config.title)}
description = "Source-cited news."
language = "en"
# Where stories are read from and the site is written to (relative to this file).
content_dir = "content"
output_dir = "public"

# Newsroom titles, for stories that carry none.
[newsrooms]
artificial-intelligence = "Artificial Intelligence"

# The site's reuse terms, published at /terms/reuse/, /.well-known/reuse.json and
# /license.xml (RSL), with robots.txt's License: and Content-Signal: lines: a starting
# point, to be made the newsroom's own. Stories whose own terms differ get a warning.
# Keys: version, summary, attribution, link_rule, keep_ids_rule, no_endorsement, and the
# uses machines may make (permits, prohibits: all, ai-all, ai-train, ai-input, ai-index,
# search).
[reuse]
version = "1"
summary = {toml_string(starter_summary)}
attribution = {toml_string(config.title)}
link_rule = "Link to the story's canonical URL (the url field of the story)."
keep_ids_rule = "When you republish a claim, keep the manifest ids the story cites for it."
permits = ["search", "ai-input"]
"""


def toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, and TOML also escapes DEL."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def requirements_text() -> str:
    """requirements.txt: the desk the publish workflow installs, this one if it can."""
    line = desk_requirement()
    if line is None:
        return ("# The desk the publish workflow installs, pinned. This desk runs from a local\n"
                "# folder or file, which the workflow cannot reach: name its release here, e.g.\n"
                "# desk @ git+https://github.com/OWNER/desk@v0.1.0\n")
    return f"# The desk the publish workflow installs, pinned.\n{line}\n"


def desk_requirement() -> str | None:
    """A requirement that installs exactly this desk, or None when it runs from a source
    checkout or came from a local file (its install record says where it came from)."""
    if shipped("templates").resolve().parent != Path(__file__).resolve().parent:
        return None  # a source checkout, not an installed package
    distribution = metadata.distribution("desk")
    record = distribution.read_text("direct_url.json")
    if not record:
        return f"desk=={distribution.version}"  # from a package index
    origin = json.loads(record)
    url = str(origin.get("url", ""))
    vcs = origin.get("vcs_info") or {}
    if not url.startswith("https://"):
        return None
    if vcs.get("vcs") == "git" and vcs.get("commit_id"):
        return f"desk @ git+{url}@{vcs['commit_id']}"
    if "archive_info" in origin:
        return f"desk @ {url}"
    return None
