"""A preview (desk serve's DevServer) of a one-story site in a test's folder, not yet
built or serving."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from storygen import REPO, make_story, write_story

from desk.config import Config, load_config
from desk.serve.server import DevServer


def one_story_preview(root: Path, now: datetime,
                      say: Callable[[str], None] = lambda line: None) -> DevServer:
    """A preview of one story written to root/content, its site and cache in root;
    `say`: where its terminal lines go."""
    content = root / "content"
    write_story(content, make_story(1))

    def load(base_url: str) -> Config:
        return load_config(REPO / "pyproject.toml", {
            "content_dir": content, "base_url": base_url,
            "output_dir": root / "public", "cache_dir": root / "cache"})

    return DevServer(load, ("127.0.0.1", 0), now, False, say)
