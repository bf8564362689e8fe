"""A story's three outputs: index.html, index.md and index.json."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment

from desk import urls
from desk.catalog import Catalog
from desk.config import Config
from desk.models import Story
from desk.prose import Prose
from desk.render import Output
from desk.render.json import story_json
from desk.render.meta import news_article, open_graph
from desk.render.templates import Alternate, Crumb, PageMeta, SiteContext
from desk.render.view import StoryView, story_view


def story_meta(view: StoryView, config: Config) -> PageMeta:
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
            Crumb(story.edition, view.edition_href),
            Crumb(story.headline, ""),
        ),
        og=open_graph(view, config),
        jsonld=news_article(view, config),
    )


def render_story(
    story: Story,
    raw: dict[str, Any] | None,
    catalog: Catalog,
    config: Config,
    env: Environment,
    prose: Prose,
    site: SiteContext,
) -> list[Output]:
    """Render one story in all three formats (`raw`: the parsed input, for key order)."""
    view = story_view(story, catalog, config, prose)
    meta = story_meta(view, config)
    html = env.get_template("story.html").render(view=view, page=meta, site=site)
    markdown = env.get_template("story.md.jinja").render(view=view, page=meta, site=site)
    return [
        Output(view.path, html.encode("utf-8")),
        Output(view.path + "index.md", markdown.encode("utf-8")),
        Output(view.path + "index.json", story_json(story, config, raw)),
    ]
