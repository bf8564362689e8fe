"""A story's three outputs: index.html, index.md and index.json."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from desk import urls
from desk.config import Config
from desk.content.loader import LoadedStory
from desk.content.models import Story
from desk.render import Output
from desk.render.context import RenderContext
from desk.render.feeds import Entry, make_entry
from desk.render.json import story_json
from desk.render.meta import news_article, open_graph
from desk.render.templates import Alternate, Crumb, PageMeta, SiteContext
from desk.render.view import StoryView, story_view


@dataclass(frozen=True)
class Wanted:
    """What the pages around the stories want captured while a story renders."""

    markdown: frozenset[str]  # paths whose index.md the llms files show
    entries: frozenset[str]  # paths some feed carries


@dataclass(frozen=True)
class RenderedStory:
    """What the rest of the build needs to know of a rendered story."""

    path: str
    key: str
    files: tuple[str, ...]
    size: int
    json_digest: str
    markdown: bytes | None  # when wanted
    entry: Entry | None  # when wanted


def story_meta(view: StoryView, config: Config, site: SiteContext) -> PageMeta:
    """Head values of a story page."""
    story = view.story
    return PageMeta(
        title=f"{story.headline} · {config.title}",
        description=story.dek,
        canonical=view.url,
        alternates=(
            Alternate("text/markdown", view.markdown_href, "Markdown"),
            Alternate("application/json", view.json_href, "JSON"),
        ),
        breadcrumbs=(
            Crumb(config.title, urls.href(config, urls.HOME)),
            Crumb(view.newsroom_title, view.newsroom_href),
            # newsroom › beat, when it has one; else the edition it came out in
            Crumb(view.beat_title, view.beat_href) if view.beat_title
            else Crumb(story.edition, view.edition_href),
            Crumb(story.headline, ""),
        ),
        # The publisher answers for the story: an agent is no byline (it is named, as the
        # writer, in the disclosure line and as the JSON-LD's contributor).
        author=config.title,
        og=open_graph(view, config),
        jsonld=news_article(view, config, site.policies),
        robots="noindex" if view.draft else "",
    )


def render_story(story: Story, raw: dict[str, Any], ctx: RenderContext,
                 draft: bool = False, search_entry: str = "") -> tuple[list[Output], StoryView]:
    """Render one story in all three formats (`raw`: the parsed input, for key order;
    `draft`: a draft shown in the preview, marked as such; `search_entry`: what names
    this version of it in the search index)."""
    view = story_view(story, ctx.catalog, ctx.config, ctx.prose, draft, search_entry)
    meta = story_meta(view, ctx.config, ctx.site)
    html = ctx.env.get_template("story.html").render(view=view, page=meta, site=ctx.site)
    markdown = ctx.env.get_template("story.md.jinja").render(view=view, page=meta,
                                                            site=ctx.site)
    return [
        Output(view.path, html.encode("utf-8")),
        Output(view.path + "index.md", markdown.encode("utf-8")),
        Output(view.path + "index.json", story_json(
            story, ctx.config, raw, view.disclosure.as_json(view.agent_url))),
    ], view


def render_story_unit(item: LoadedStory, key: str, ctx: RenderContext, wanted: Wanted
                      ) -> tuple[list[Output], RenderedStory]:
    """A story's files, read from its file, and the record the build keeps of them."""
    outputs, view = render_story(*ctx.read(item), ctx, item.draft, item.search_entry)
    path = item.url_path
    markdown = outputs[1].data if path in wanted.markdown else None
    entry = make_entry(view, ctx.env, ctx.config) if path in wanted.entries else None
    record = RenderedStory(path, key, tuple(urls.relative_file(o.path) for o in outputs),
                           sum(len(o.data) for o in outputs),
                           hashlib.sha256(outputs[2].data).hexdigest(), markdown, entry)
    return outputs, record


def story_markdown(item: LoadedStory, ctx: RenderContext) -> bytes:
    """A story's index.md: captured while it rendered, or rendered from its file."""
    captured = ctx.stories.markdown.get(item.url_path)
    if captured is not None:
        return captured
    story, _ = ctx.read(item)
    view = story_view(story, ctx.catalog, ctx.config, ctx.prose, item.draft)
    markdown = ctx.env.get_template("story.md.jinja").render(
        view=view, page=story_meta(view, ctx.config, ctx.site), site=ctx.site)
    return markdown.encode("utf-8")
