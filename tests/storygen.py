"""A generator of valid stories for tests: small, varied and fully cited."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from desk.config import Config, load_config
from desk.content.loader import expected_urls
from desk.content.models import Links, Story, order_like
from desk.render.json import encode

REPO = Path(__file__).resolve().parent.parent
SEED_PATH = REPO / "content" / "stories" / "2026-11-14" / "inference-throughput-race-kimi-deepseek.json"


def seed() -> dict[str, Any]:
    """A fresh copy of the seed story."""
    return json.loads(SEED_PATH.read_text(encoding="utf-8"))


def make_story(
    n: int,
    newsroom: str = "artificial-intelligence",
    published_at: datetime | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """Story number n: minimal but complete and consistent (every check passes)."""
    when = published_at or datetime(2026, 11, 14, 12, 0, tzinfo=UTC) + timedelta(minutes=n)
    when = when.astimezone(UTC)
    manifest_a, manifest_b = f"9{n:06d}01", f"9{n:06d}02"
    data: dict[str, Any] = {
        "schema": "hangingcontext.desk/1",
        "type": "story",
        "id": str(10_000 + n),
        "slug": f"story-number-{n}",
        "edition": when.strftime("%Y-%m-%dT%H"),
        "newsroom": newsroom,
        "newsroom_title": newsroom.replace("-", " ").title(),
        "angle": f"Angle of story {n}",
        "headline": f"Headline of story {n}",
        "dek": f"Dek of story {n}.",
        "published_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "labels": {"trust": "confirmed", "trust_text": "Confirmed · 2 Manifests"},
        "source_count": 2,
        "sources": ["pub-a", "pub-b"],
        "distinct_source_count": 2,
        "key_facts": [
            {"text": f"Fact one of story {n}.",
             "cites": [{"claim_ids": [f"{n}1"], "manifest_id": manifest_a}],
             "self_reported": False},
        ],
        "sections": [
            {"heading": f"Section of story {n}",
             "paragraphs": [
                 {"cites": [{"claim_ids": [f"{n}2"], "manifest_id": manifest_a}],
                  "markdown": f"Paragraph one of story {n} with *emphasis*."},
                 {"cites": [{"claim_ids": [f"{n}3"], "manifest_id": manifest_b}],
                  "markdown": f"Paragraph two of story {n}."},
             ]},
        ],
        "cited_manifest_ids": [manifest_a, manifest_b],
        "manifests": [
            {"title": f"Source A of {n}", "source_url": f"https://a.example/{n}",
             "manifest_id": manifest_a, "source_name": "pub-a", "published_date": "2026-11-13"},
            {"title": f"Source B of {n}", "source_url": f"https://b.example/{n}",
             "manifest_id": manifest_b, "source_name": "pub-b", "published_date": "2026-11-13"},
        ],
    }
    data.update(copy.deepcopy(overrides))
    return data


def write_story(content: Path, data: dict[str, Any], name: str | None = None) -> Path:
    """Write a story under content/stories/ and return its path."""
    folder = content / "stories" / str(data.get("published_at", "undated"))[:10]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"{data.get('slug', 'story')}.json")
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def make_corpus(content: Path, count: int, newsrooms: tuple[str, ...] = (
    "artificial-intelligence", "climate", "markets")) -> list[dict[str, Any]]:
    """Write `count` stories spread over newsrooms and hourly editions (a few per hour)."""
    start = datetime(2026, 11, 10, 6, 0, tzinfo=UTC)
    stories = []
    for n in range(count):
        when = start + timedelta(minutes=17 * n)
        data = make_story(n, newsrooms[n % len(newsrooms)], when)
        write_story(content, data)
        stories.append(data)
    return stories


def corpus_site(tmp_path: Path, count: int, site: str = "site", **settings: object
                ) -> tuple[Path, list[dict[str, Any]], Config]:
    """A corpus of `count` stories (make_corpus) in tmp_path/content and the settings of
    its site in tmp_path/SITE, with its cache in tmp_path/cache and no search."""
    content = tmp_path / "content"
    stories = make_corpus(content, count)
    config = load_config(REPO / "pyproject.toml", {
        "cache_dir": tmp_path / "cache", "search": False, "content_dir": content,
        "output_dir": tmp_path / site, **settings})
    return content, stories, config


def write_draft(content: Path, data: dict[str, Any], name: str | None = None) -> Path:
    """Write a story under content/drafts/ (`name` may name subfolders) and return its path."""
    path = content / "drafts" / (name or f"{data.get('slug', 'story')}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def write_withdrawal(content: Path, story_id: str, reason: str = "Its main source retracted "
                     "the figures it reported.", withdrawn_at: str = "2026-11-15T09:00:00Z",
                     name: str | None = None) -> Path:
    """Write a file under content/withdrawn/ and return its path."""
    folder = content / "withdrawn"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (name or f"{story_id}.json")
    data = {"id": story_id, "withdrawn_at": withdrawn_at, "reason": reason}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def published_story(story: Story, config: Config) -> Story:
    """What index.json says, defined by the models (desk.render.json.story_json patches
    its dump instead): the story with url, links and reuse.canonical_url as laid out."""
    expected = expected_urls(story, config)
    links = Links.model_validate({key: expected[f"/links/{key}"]
                                  for key in ("html", "json", "markdown", "newsroom",
                                              "edition")})
    if story.links is not None:  # the input's key order and extra keys are kept
        links = story.links.model_copy(update=dict(links))
    update: dict[str, Any] = {"url": expected["/url"], "links": links}
    if story.reuse is not None:
        update["reuse"] = story.reuse.model_copy(
            update={"canonical_url": expected["/reuse/canonical_url"]})
    return story.model_copy(update=update)


def published_json(story: Story, config: Config, like: dict[str, Any]) -> bytes:
    """index.json by the models: published_story dumped in the key order of `like`."""
    data = published_story(story, config).model_dump(mode="json", by_alias=True,
                                                     exclude_unset=True)
    return encode(order_like(data, like))


# The newsroom's own pages of a test site: an About and three policies.
NEWSROOM_PAGES = {
    "about.md": ("About", 10, "masthead"),
    "policies/principles.md": ("Publishing principles", 20, "publishingPrinciples"),
    "policies/corrections.md": ("Corrections policy", 30, "correctionsPolicy"),
    "policies/ethics.md": ("Ethics policy", None, "ethicsPolicy"),
}


def write_pages(content: Path) -> None:
    """Write the newsroom's own pages (NEWSROOM_PAGES) below content/pages/."""
    for name, (title, nav, policy) in NEWSROOM_PAGES.items():
        path = content / "pages" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        order = f"nav: {nav}\n" if nav is not None else ""
        path.write_text(f"---\ntitle: {title}\ndescription: The {title.lower()} of the desk.\n"
                        f"{order}policy: {policy}\n---\n## What we do\n\n"
                        f"The *{title.lower()}*, with [a link](https://example.org/) and a "
                        "list:\n\n- one\n- two\n", encoding="utf-8")
